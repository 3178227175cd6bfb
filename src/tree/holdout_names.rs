//! Is a sealed holdout really sealed? A holdout tells a candidate nothing only while nothing the
//! candidate or its agent can read names it (docs/design.md §2.2.12). This module searches the
//! baseline's tree as a candidate sees it (overlay included) and any other text given to agents
//! (the campaign's brief) for each holdout's distinguishing arguments and for the files it reads.
//!
//! A holdout command's *distinguishing pairs* are its arguments, each with the flag before it
//! (`--B 16` is `(B, 16)`; a positional argument has none), that no public scenario's command
//! passes. A window of three lines names the command when it holds, each as a flag immediately
//! followed by its value (`B=16`, `--B 16`, `B: 16`), all of them but one (all of one or two); a
//! positional value shows alone when it is at least three characters long (`30000`,
//! `holdout.bin`). Words, not bytes: `116` does not contain `16`. A path-like argument that is a
//! file of the tree is an input the candidate can read.

use std::path::{Path, PathBuf};

use crate::check::words::shell_words;
use crate::spec::workload::Scenario;

/// Files larger than this are not read (data, not prose or code).
const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;

/// Lines a mention may spread over (a table row, a command split over lines).
const WINDOW_LINES: usize = 3;

/// Shortest positional value that names a holdout on its own.
const MIN_POSITIONAL_CHARS: usize = 3;

/// A holdout named where a candidate or an agent can read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    pub scenario: String,
    /// `path:line` in the tree, or the name of the text given (`the campaign's brief`).
    pub place: String,
    /// `arguments`, or `input` (a file the holdout reads is in the tree).
    pub found: &'static str,
}

/// One argument of a command: the flag before it, if any, and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pair {
    flag: Option<String>,
    value: String,
}

/// What names one holdout command: its distinguishing pairs.
#[derive(Debug, Clone)]
struct Fingerprint {
    scenario: String,
    pairs: Vec<Pair>,
}

/// The words of `text` that a mention is made of: runs of letters, digits and `_ . + -`, with
/// leading dashes dropped (`--B` and `B` are one flag).
fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || "_.+-".contains(c)))
        .map(|t| t.trim_start_matches('-').trim_end_matches('.'))
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// The arguments of `command` (its program dropped), each with the flag before it; `{…}`
/// placeholders and bare flags are no values.
fn pairs(command: &str) -> Vec<Pair> {
    let words = shell_words(command)
        .unwrap_or_else(|| (command.split_whitespace().map(str::to_string)).collect());
    let mut out = Vec::new();
    let mut flag: Option<String> = None;
    for word in words.into_iter().skip(1) {
        if word.contains('{') {
            flag = None;
            continue;
        }
        if word.starts_with('-')
            && word.len() > 1
            && !word[1..].starts_with(|c: char| c.is_ascii_digit())
        {
            match word.split_once('=') {
                Some((f, v)) if !v.is_empty() => out.push(Pair {
                    flag: Some(f.trim_start_matches('-').to_string()),
                    value: v.to_string(),
                }),
                _ => flag = Some(word.trim_start_matches('-').to_string()),
            }
            continue;
        }
        out.push(Pair {
            flag: flag.take(),
            value: word,
        });
    }
    out
}

fn commands(s: &Scenario) -> Vec<&str> {
    let mut c = vec![s.run.as_str(), s.check.as_str()];
    c.extend(s.count.as_ref().map(|c| c.run.as_str()));
    c
}

fn fingerprints(holdouts: &[Scenario], public: &[Scenario]) -> Vec<Fingerprint> {
    let known: Vec<Pair> = public.iter().flat_map(commands).flat_map(pairs).collect();
    let mut out = Vec::new();
    for h in holdouts {
        for command in commands(h) {
            let own: Vec<Pair> = (pairs(command).into_iter())
                .filter(|p| !known.contains(p))
                .collect();
            if !own.is_empty() {
                out.push(Fingerprint {
                    scenario: h.name.clone(),
                    pairs: own,
                });
            }
        }
    }
    out
}

/// Whether `window` (the tokens of a few lines) names the command of `f`.
fn names(f: &Fingerprint, window: &[String]) -> bool {
    let at =
        |needle: &[String]| !needle.is_empty() && window.windows(needle.len()).any(|w| w == needle);
    let shown = f
        .pairs
        .iter()
        .filter(|p| {
            let value = tokens(&p.value);
            match &p.flag {
                Some(flag) => {
                    let mut both = tokens(flag);
                    both.extend(value);
                    at(&both)
                }
                None => p.value.chars().count() >= MIN_POSITIONAL_CHARS && at(&value),
            }
        })
        .count();
    shown >= needed(f.pairs.len())
}

/// How many of a command's `n` distinguishing pairs a window must show: all of one or two, all
/// but one of more (one small pair alone, `B=2`, is in every other shape's text).
fn needed(n: usize) -> usize {
    if n <= 2 { n } else { n - 1 }
}

/// Every mention of `fingerprints` in `text`, whose lines are numbered from 1 at `place`.
fn mentions_in(fingerprints: &[Fingerprint], text: &str, place: &str, out: &mut Vec<Mention>) {
    let lines: Vec<Vec<String>> = text.lines().map(tokens).collect();
    for f in fingerprints {
        if out
            .iter()
            .any(|m| m.scenario == f.scenario && m.found == "arguments")
        {
            continue;
        }
        // The line a mention ends on: the first window, by its last line, that names it.
        let hit = (0..lines.len()).find(|&last| {
            let first = (last + 1).saturating_sub(WINDOW_LINES);
            names(f, &lines[first..=last].concat())
        });
        if let Some(last) = hit {
            out.push(Mention {
                scenario: f.scenario.clone(),
                place: format!("{place}:{}", last + 1),
                found: "arguments",
            });
        }
    }
}

/// Every file under `root` (no `.git`), relative paths sorted.
fn files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&rel)) else {
            continue;
        };
        for e in entries.flatten() {
            let path = rel.join(e.file_name());
            match e.file_type() {
                Ok(t) if t.is_dir() && e.file_name() != ".git" => stack.push(path),
                Ok(t) if t.is_file() => out.push(path),
                _ => {}
            }
        }
    }
    out.sort();
    out
}

/// Where the `holdouts` are named in the tree at `root` or in the `texts` (name, text) given to
/// agents, against the `public` scenarios (the workload's own). Each holdout is reported once
/// for its arguments (the first place found) and once for each input in the tree.
pub fn holdout_mentions(
    root: &Path,
    texts: &[(&str, &str)],
    holdouts: &[Scenario],
    public: &[Scenario],
) -> Vec<Mention> {
    let prints = fingerprints(holdouts, public);
    let mut out = Vec::new();
    for (place, text) in texts {
        mentions_in(&prints, text, place, &mut out);
    }
    for rel in files(root) {
        let path = root.join(&rel);
        let small = std::fs::metadata(&path).is_ok_and(|m| m.len() <= MAX_FILE_BYTES);
        let Some(bytes) = small.then(|| std::fs::read(&path).ok()).flatten() else {
            continue;
        };
        if bytes.iter().take(8192).any(|b| *b == 0) {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        mentions_in(&prints, &text, &rel.display().to_string(), &mut out);
    }
    for h in holdouts {
        let cwd = root.join(h.cwd.as_deref().unwrap_or("."));
        for p in commands(h).into_iter().flat_map(pairs) {
            let path_like = p.value.contains('/') || p.value.contains('.');
            let in_tree = |base: &Path| {
                let candidate = base.join(&p.value);
                candidate.starts_with(root) && candidate.is_file()
            };
            if path_like && !p.value.starts_with('/') && (in_tree(&cwd) || in_tree(root)) {
                out.push(Mention {
                    scenario: h.name.clone(),
                    place: p.value.clone(),
                    found: "input",
                });
            }
        }
    }
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::workload::{Compare, Role};

    fn scenario(name: &str, role: Role, run: &str, check: &str) -> Scenario {
        Scenario {
            name: name.into(),
            role,
            run: run.into(),
            check: check.into(),
            compare: Compare::Exact,
            deterministic_output: false,
            compare_timed_output: false,
            cwd: Some("w".into()),
            env: Default::default(),
            timeout_s: crate::spec::values::Seconds::from_secs(60),
            count: None,
            draw: None,
            inputs: Default::default(),
            iteration_digest: None,
            description: None,
        }
    }

    fn public() -> Vec<Scenario> {
        vec![scenario(
            "train",
            Role::Training,
            "./k bench --seed {seed} --B 4 --T 64 --C 128 --NH 4 --iters 6",
            "./k check --seed {seed} --B 3 --T 11 --C 40 --NH 4",
        )]
    }

    fn holdout() -> Scenario {
        scenario(
            "sealed-x",
            Role::Holdout,
            "./k bench --seed {seed} --B 24 --T 48 --C 72 --NH 4 --iters 7",
            "./k check --seed {seed} --B 7 --T 9 --C 52 --NH 4",
        )
    }

    fn found(text: &str) -> Vec<Mention> {
        let dir = tempfile::tempdir().unwrap();
        holdout_mentions(dir.path(), &[("brief", text)], &[holdout()], &public())
    }

    #[test]
    fn a_readme_that_spells_the_shape_names_the_holdout() {
        for text in [
            "| wide | B=24 T=48 C=72 NH=4, 7 iterations |",
            "run ./k bench --seed 7 --B 24 --T 48 --C 72",
            "other shapes:\n  --B 24 --T 48\n  --C 72",
            "the check shape B: 7, T: 9, C: 52",
        ] {
            let m = found(text);
            assert_eq!(m.len(), 1, "{text}");
            assert_eq!(m[0].scenario, "sealed-x");
            assert!(m[0].place.starts_with("brief:"), "{m:?}");
        }
        assert_eq!(found("x\ny\n| B=24 T=48 C=72 |")[0].place, "brief:3");
    }

    #[test]
    fn the_public_shapes_and_loose_numbers_name_nothing() {
        for text in [
            "./k bench --seed 7 --B 4 --T 64 --C 128 --NH 4 --iters 6",
            "float tile[24][48]; int c = 72; // 7 iterations",
            "B=124 T=480 C=72",
            "B=24\n\n\n\nT=48",
            // Another shape that shares two of the check's four pairs (B=7, NH=4 is public).
            "a small block (B=7 T=5 C=12 NH=3)",
            "",
        ] {
            assert_eq!(found(text), [], "{text}");
        }
    }

    #[test]
    fn a_file_of_the_tree_is_searched_and_so_is_an_input_it_holds() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("w/docs")).unwrap();
        std::fs::write(
            dir.path().join("w/docs/notes.md"),
            "a\nb\nsizes --B 7 --T 9\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("w/data.bin"), [0u8, 1, 2]).unwrap();
        let mut h = holdout();
        h.run = "./k bench --input data.bin --seed {seed}".into();
        let m = holdout_mentions(dir.path(), &[], &[h], &public());
        assert!(
            m.contains(&Mention {
                scenario: "sealed-x".into(),
                place: "w/docs/notes.md:3".into(),
                found: "arguments",
            }),
            "{m:?}"
        );
        assert!(
            m.contains(&Mention {
                scenario: "sealed-x".into(),
                place: "data.bin".into(),
                found: "input",
            }),
            "{m:?}"
        );
    }

    #[test]
    fn one_distinguishing_value_needs_its_flag_or_enough_characters() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = holdout();
        h.run = "./k bench --seed {seed} --B 4 --T 64 --C 128 --NH 4 --iters 9".into();
        h.check = public()[0].check.clone();
        let scan =
            |text: &str| holdout_mentions(dir.path(), &[("b", text)], &[h.clone()], &public());
        assert_eq!(scan("9 iterations").len(), 0);
        assert_eq!(scan("with --iters 9").len(), 1);
        h.run = "./run 30000".into();
        let scan =
            |text: &str| holdout_mentions(dir.path(), &[("b", text)], &[h.clone()], &public());
        assert_eq!(scan("n = 30000;").len(), 1);
        assert_eq!(scan("n = 300001;").len(), 0);
    }
}
