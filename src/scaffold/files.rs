//! The three starting files `evo init` writes, as text: a campaign, a workload and an empty
//! holdout file, each with a `$comment` saying what every field it set means and what to edit.
//!
//! The shapes here are write-only mirrors of `spec::{Campaign, Workload, Holdouts}` holding just
//! the fields a starting file sets, in the order a reader wants them (the spec types would print
//! every default and `null`). Tests parse the output with the spec types and build a plan from it.

use std::collections::BTreeMap;

use serde::Serialize;

use super::detect::ProjectKind;

/// Where the campaign goes: the repository root, where `evo confirm` looks without `--campaign`.
pub const CAMPAIGN_FILE: &str = crate::plan::DEFAULT_CAMPAIGN;
pub const WORKLOAD_FILE: &str = "evo/workload.json";
pub const HOLDOUTS_FILE: &str = "evo/holdouts.json";
/// Run directories and receipts, relative to the campaign file: hidden, and one line to ignore.
pub const OUTPUT_DIR: &str = ".evo/receipts";

/// What the files are written from.
#[derive(Debug, Clone)]
pub struct StarterInput {
    pub kind: ProjectKind,
    /// The repository folder's name, used as the campaign's and the workload's name.
    pub name: String,
    /// The full SHA of the commit checked out when `evo init` ran.
    pub baseline: String,
    /// `--run`: the timed command.
    pub run: Option<String>,
    /// `--check`: the differential command.
    pub check: Option<String>,
}

/// The three files' contents, and what the user should know before the first confirmation.
#[derive(Debug, Clone)]
pub struct StarterFiles {
    pub campaign: String,
    pub workload: String,
    pub holdouts: String,
    /// Things left for the user to do, said once on the terminal (also in the comments).
    pub todo: Vec<String>,
}

#[derive(Serialize)]
struct CampaignFile {
    #[serde(rename = "$comment")]
    comment: Vec<String>,
    name: String,
    repo: &'static str,
    baseline: String,
    workload: &'static str,
    holdouts: &'static str,
    confirm: ConfirmFile,
    output: &'static str,
}

#[derive(Serialize)]
struct ConfirmFile {
    pairs: u32,
    max_pairs: u32,
    min_effect: f64,
}

#[derive(Serialize)]
struct WorkloadFile {
    #[serde(rename = "$comment")]
    comment: Vec<String>,
    name: String,
    build: StepFile,
    test: StepFile,
    scenarios: Vec<ScenarioFile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sanitize: Option<SanitizeFile>,
    protected: Vec<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    config_files: Vec<&'static str>,
}

#[derive(Serialize)]
pub(super) struct StepFile {
    pub command: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<&'static str, &'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<String>>,
    pub timeout_s: u32,
}

#[derive(Serialize)]
pub(super) struct SanitizeFile {
    pub build: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flags: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<&'static str, &'static str>,
    pub timeout_s: u32,
}

#[derive(Serialize)]
struct ScenarioFile {
    name: &'static str,
    role: &'static str,
    run: String,
    check: String,
    compare: &'static str,
    deterministic_output: bool,
    timeout_s: u32,
}

#[derive(Serialize)]
struct HoldoutsFile {
    #[serde(rename = "$comment")]
    comment: Vec<String>,
    scenarios: Vec<ScenarioFile>,
}

/// A timed command that fails and says what to edit, for a project whose program evo cannot
/// guess: the files load as they are, and the first confirmation stops at it with the message.
pub fn placeholder_run() -> String {
    format!(
        "echo 'evo: no timed command yet: edit scenarios[0].run and .check in {WORKLOAD_FILE} \
         (or run evo init --force --run CMD)' >&2; exit 1"
    )
}

/// The three files for `input`.
pub fn starter_files(input: &StarterInput) -> StarterFiles {
    let steps = super::steps::steps(&input.kind);
    let mut todo = steps.todo;
    let run = match input.run.clone().or(steps.run.clone()) {
        Some(run) => run,
        None => {
            todo.push(format!(
                "set the timed command: scenarios[0].run and .check in {WORKLOAD_FILE} (now a \
                 placeholder that fails and says so), or run `evo init --force --run CMD`"
            ));
            placeholder_run()
        }
    };
    let check = input.check.clone().unwrap_or_else(|| run.clone());
    if !crate::check::has_seed(&run) {
        todo.push(format!(
            "make the timed command take `{{seed}}` (scenarios[0].run in {WORKLOAD_FILE}) and \
             derive its inputs from it: without a fresh seed in every pair, a result one run \
             stored for the next cannot be told from one it computed, and no confirmation \
             reaches tier `tested` (docs/workloads.md in evo's repository)"
        ));
    }
    todo.push(format!(
        "say what the timed command does, on what data, in scenarios[0].description of \
         {WORKLOAD_FILE} (\"50 decompressions of a 1 MiB corpus, after generating it\"): the PR \
         text shows it beside the speed, so a reader knows what got faster"
    ));
    let scenario = ScenarioFile {
        name: "main",
        role: "training",
        deterministic_output: check == run,
        run,
        check,
        compare: "exact",
        timeout_s: 120,
    };
    let workload = WorkloadFile {
        comment: workload_comment(input, &steps.notes, &scenario),
        name: input.name.clone(),
        build: steps.build,
        test: steps.test,
        scenarios: vec![scenario],
        sanitize: steps.sanitize,
        protected: vec![CAMPAIGN_FILE, "evo/**"],
        config_files: steps.config_files,
    };
    let campaign = CampaignFile {
        comment: campaign_comment(input),
        name: input.name.clone(),
        repo: ".",
        baseline: input.baseline.clone(),
        workload: WORKLOAD_FILE,
        holdouts: HOLDOUTS_FILE,
        confirm: ConfirmFile {
            pairs: 9,
            max_pairs: 30,
            min_effect: 0.01,
        },
        output: OUTPUT_DIR,
    };
    let holdouts = HoldoutsFile {
        comment: holdouts_comment(),
        scenarios: Vec::new(),
    };
    StarterFiles {
        campaign: pretty(&campaign),
        workload: pretty(&workload),
        holdouts: pretty(&holdouts),
        todo,
    }
}

fn pretty<T: Serialize>(value: &T) -> String {
    // These shapes hold strings, numbers and lists only: printing them cannot fail.
    serde_json::to_string_pretty(value).unwrap_or_default() + "\n"
}

fn workload_comment(input: &StarterInput, notes: &[String], s: &ScenarioFile) -> Vec<String> {
    let mut lines = vec![
        format!(
            "Written by `evo init` for {}. JSON has no comments, so evo reads this \"$comment\" \
             (a string or a list of strings) and ignores it. The receipt records this file's \
             sha256, so any edit, here too, changes that digest.",
            input.kind.describe()
        ),
        "name: a label for the program, shown in results.".to_string(),
        "Every command runs with `sh -c` from the root of a fresh copy of the baseline commit \
         (one for the baseline, one for the candidate), never in your work tree."
            .to_string(),
    ];
    lines.extend(notes.iter().cloned());
    lines.extend([
        "scenarios[0].run: the timed command. Both arms run it in alternating pairs, after A/A \
         pairs of the baseline against itself that measure the noise. Pick an input that runs \
         for about a second or more: shorter runs are mostly noise and process start-up."
            .to_string(),
        "scenarios[0].check: run once per tree, untimed; its stdout is the evidence that the \
         candidate computes the same thing, compared by `compare`: \"exact\" is byte for byte; \
         use {\"tolerance\": {\"abs\": 1e-9, \"rel\": 1e-6}} when floating-point results may \
         differ in the last digits. A smaller input of the same computation makes it faster. \
         `{seed}` becomes a fresh random number: one per confirmation in check, and one per \
         timed pair in run (both arms the same), so a patch cannot memorize the answer to a \
         known input, nor replay what an earlier run computed."
            .to_string(),
        "If the timed command repeats a pass (iterations, epochs, a loop over the same data), \
         give each pass its own inputs, derived from the seed and the pass's number, and print \
         each pass's result: a pass that recomputes the one before it can be skipped by a \
         candidate where no output shows it, and evo caps the tier below tested when it sees \
         the same lines printed twice in a row. A harness that prints only a summary can print \
         one line per pass, `pass <digest of its result>`, and declare \
         \"iteration_digest\": \"pass \" in the scenario: evo then caps the tier when two \
         passes print the same digest (docs/workloads.md)."
            .to_string(),
    ]);
    lines.push(if s.deterministic_output {
        "scenarios[0].deterministic_output: true because check is the timed command: the two \
         runs of every timed pair (same seed) must print the same bytes, so a candidate cannot \
         do less work only when timed. If floating-point results may move in their last digits, \
         use compare_timed_output: true with a tolerance instead; if the program prints timings \
         or other varying text, neither works, and replay cannot be detected."
            .to_string()
    } else {
        "scenarios[0].deterministic_output: false because check differs from run; set it to \
         true if the timed command prints the same bytes for the same seed (or \
         compare_timed_output: true to compare them under `compare`): the two runs of every \
         timed pair are then compared, and a candidate whose timed run prints anything else is \
         rejected. Without either, replay cannot be detected and the tier stays below tested."
            .to_string()
    });
    lines.extend([
        "timeout_s: seconds before a step is killed (build, test, one run).".to_string(),
        format!(
            "protected: globs of paths no candidate patch may touch: evo's own files \
             ({CAMPAIGN_FILE} and evo/). Add your benchmark harness and tests."
        ),
        "config_files (when present): globs of every build file of the project's kind, at any \
         depth (`**/` matches the root too); a patch that changes these and code gets a lane \
         measuring what the configuration alone gives."
            .to_string(),
        "More scenarios: add objects to `scenarios` (each \"role\": \"training\"); a scenario's \
         \"draw\" also checks inputs drawn afresh for each confirmation from ranges you declare. \
         The \"sanitize\" section (when present) adds a sanitizer lane; with \"flags\" \
         (-g -fsanitize=address,undefined -fno-sanitize-recover=all) its build is your own \
         build through evo's compilers, which append the flags to every compile. \
         \"single_threaded\": true rejects a candidate whose timed runs use a second CPU. `evo \
         schema workload` prints every field."
            .to_string(),
    ]);
    lines
}

fn campaign_comment(input: &StarterInput) -> Vec<String> {
    vec![
        "Written by `evo init`. evo ignores this \"$comment\". `evo confirm PATCH` run at the \
         repository root reads this file (evo.json) without --campaign."
            .to_string(),
        "name: a label for results. repo: the git repository, relative to this file.".to_string(),
        format!(
            "baseline: the commit every candidate is compared with, pinned to the full SHA of \
             the commit checked out when evo init ran ({}). A name such as HEAD or main would \
             move with every commit, so two confirmations could compare against different code \
             and a patch made on one commit could be judged against another; a SHA says exactly \
             what was measured. Change it on purpose when the baseline should move. Uncommitted \
             changes are never part of the baseline.",
            short(&input.baseline)
        ),
        format!(
            "workload: how to build, test, check and time the program ({WORKLOAD_FILE}). \
             holdouts: sealed scenarios measured only at confirmation ({HOLDOUTS_FILE}, empty \
             for now)."
        ),
        "confirm.pairs: the fewest candidate/baseline pairs timed (at least 6, for a 95% \
         interval); confirm.max_pairs: how far evo may go when its A/A noise says 9 cannot \
         resolve min_effect; confirm.min_effect: the smallest speedup worth accepting (0.01 is \
         1%). Lower max_pairs for shorter confirmations."
            .to_string(),
        format!(
            "output: where each confirmation's run directory (result, logs, signed receipt, PR \
             text) goes, relative to this file. Add `.evo/` to .gitignore so receipts do not \
             show up as changes to {}.",
            input.name
        ),
        "Not set, so at their defaults: key (evo's per-user key in ~/.config/evo, created on \
         first use), sandbox (bubblewrap when the machine has it), search and the other confirm \
         settings. `evo schema campaign` prints every field."
            .to_string(),
        "For `evo campaign run`, add candidates ([{\"name\": \"...\", \"patch\": \"x.patch\"}]) \
         or an agent. For one patch: `evo confirm x.patch`."
            .to_string(),
    ]
}

fn holdouts_comment() -> Vec<String> {
    vec![
        "Written by `evo init`. evo ignores this \"$comment\".".to_string(),
        "scenarios: sealed holdouts, measured only at confirmation and published in the receipt \
         only as digests, so a patch tuned to the training scenario's input is caught by inputs \
         it never saw. Empty for now: evo init cannot guess a second input. Add scenarios shaped \
         like the one in workload.json, with \"role\": \"holdout\" and another input (another \
         size, another file); without any, a confirmation can reach the tier `measured`, never \
         `tested`. Better, give a holdout \"inputs\" ({\"N\": {\"min\": 1000, \"max\": 9000}}) and \
         write {N} in its run and check: each confirmation then draws them afresh, so there is \
         no fixed holdout input a candidate could special-case."
            .to_string(),
        "Name no holdout anywhere a candidate reads (a README, a comment, the campaign's brief): \
         evo searches the baseline's tree and the brief for each holdout's arguments, and a \
         holdout it finds there is not sealed and caps the tier at measured."
            .to_string(),
        "Keep this file out of the commits you confirm against (an untracked or ignored file, \
         or one kept outside the repository with the campaign's \"holdouts\" path changed): a \
         committed holdout file is in every tree a candidate is built in and every agent reads."
            .to_string(),
    ]
}

/// A SHA shortened for prose; the field itself holds the full one.
fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}
