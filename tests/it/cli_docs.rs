//! `evo completions` and `evo man`: generated from the clap definitions, so they name every
//! public subcommand and option, and the man page carries the exit codes `--help` lists.

use crate::util;

use clap::CommandFactory;

/// Every visible subcommand of evo, at every depth, as `["campaign", "run"]`.
fn public_subcommands() -> Vec<Vec<String>> {
    fn walk(cmd: &clap::Command, parents: &[String], out: &mut Vec<Vec<String>>) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let mut path = parents.to_vec();
            path.push(sub.get_name().to_string());
            out.push(path.clone());
            walk(sub, &path, out);
        }
    }
    let mut out = Vec::new();
    walk(&evo::cli::Cli::command(), &[], &mut out);
    out
}

fn stdout_of(args: &[&str]) -> String {
    let out = util::evo().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", util::text(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// Roff text with its escaped hyphens and the font changes around words made plain.
fn plain_roff(roff: &str) -> String {
    roff.replace("\\-", "-")
        .replace("\\fB", "")
        .replace("\\fI", "")
        .replace("\\fR", "")
}

#[test]
fn the_bash_completion_names_every_public_subcommand_and_option() {
    let script = stdout_of(&["completions", "bash"]);
    let subcommands = public_subcommands();
    for name in [
        "bench",
        "campaign",
        "confirm",
        "keygen",
        "receipt",
        "pr",
        "schema",
        "completions",
        "man",
    ] {
        assert!(
            subcommands.iter().any(|p| p == &[name]),
            "{name}: {subcommands:?}"
        );
    }
    for path in &subcommands {
        let last = path.last().unwrap();
        assert!(script.contains(last.as_str()), "{path:?} is not completed");
    }
    for option in [
        "--max-pairs",
        "--min-effect",
        "--recompute",
        "--verbose",
        "--resume",
    ] {
        assert!(script.contains(option), "{option} is not completed");
    }
    assert!(!script.contains("__exec-helper") && !script.contains("__sandbox-init"));
}

/// What bash offers after `line` (words split on spaces, the last one being completed), from the
/// script `evo completions bash` printed, run the way bash's `complete -F` runs it.
fn bash_offers(script: &std::path::Path, line: &str) -> Vec<String> {
    let words: Vec<&str> = line.split(' ').collect();
    let program = format!(
        "source {script}; COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE='{line}'; \
         COMP_POINT=${{#COMP_LINE}}; _evo evo '{cur}' '{prev}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script = script.display(),
        words = words.join(" "),
        cword = words.len() - 1,
        cur = words[words.len() - 1],
        prev = words[words.len() - 2],
    );
    let out = std::process::Command::new("bash")
        .args(["-c", &program])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", util::text(&out));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_subcommands_and_options_through_the_generated_function() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("evo.bash");
    std::fs::write(&script, stdout_of(&["completions", "bash"])).unwrap();
    assert_eq!(bash_offers(&script, "evo con"), ["confirm"]);
    assert_eq!(bash_offers(&script, "evo bench --max-p"), ["--max-pairs"]);
    assert_eq!(bash_offers(&script, "evo confirm --verb"), ["--verbose"]);
    assert_eq!(bash_offers(&script, "evo campaign r"), ["run"]);
    assert_eq!(
        bash_offers(&script, "evo completions ba"),
        ["bash"],
        "shell names are completed"
    );
}

#[test]
fn every_shell_gets_a_completion_script() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = stdout_of(&["completions", shell]);
        assert!(script.contains("max-pairs"), "{shell}:\n{script}");
    }
    let out = util::evo().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", util::text(&out));
}

#[test]
fn the_man_page_has_name_synopsis_subcommands_and_exit_codes() {
    let page = stdout_of(&["man"]);
    assert!(
        page.starts_with(".ie") || page.contains(".TH evo 1"),
        "{page}"
    );
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH SUBCOMMANDS"] {
        assert!(page.contains(section), "{section}:\n{page}");
    }
    let plain = plain_roff(&page);
    for d in evo::exit_codes::ALL {
        assert!(plain.contains(d.meaning), "exit code {}:\n{page}", d.code);
    }
    assert!(!plain.contains("__exec-helper"), "{page}");
}

#[test]
fn man_out_writes_one_page_per_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let listing = stdout_of(&["man", "--out", dir.path().to_str().unwrap()]);
    let mut expected: Vec<String> = public_subcommands()
        .iter()
        .filter(|p| p.last().map(String::as_str) != Some("help"))
        .map(|p| format!("evo-{}.1", p.join("-")))
        .collect();
    expected.push("evo.1".into());
    expected.sort();
    let mut written: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    assert_eq!(written, expected, "{listing}");
    let confirm = plain_roff(&std::fs::read_to_string(dir.path().join("evo-confirm.1")).unwrap());
    assert!(confirm.contains(".SH NAME\nevo-confirm"), "{confirm}");
    assert!(
        confirm.contains("evo confirm"),
        "the synopsis names the command:\n{confirm}"
    );
    assert!(confirm.contains("--verbose"), "{confirm}");
    for d in evo::exit_codes::ALL {
        assert!(
            confirm.contains(d.meaning),
            "exit code {}:\n{confirm}",
            d.code
        );
    }
    let run = plain_roff(&std::fs::read_to_string(dir.path().join("evo-campaign-run.1")).unwrap());
    assert!(run.contains("--resume"), "{run}");
    assert!(listing.contains("evo campaign run: "), "{listing}");
}
