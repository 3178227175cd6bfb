//! The example GitHub Actions workflow (examples/github/evo.yml) cannot rot: every `evo` command
//! in it, comments included, names a subcommand and flags that `evo … --help` lists, with values
//! it accepts, and the paths its steps share agree with the confirm command's.
//!
//! The YAML is read with line logic, not a YAML parser: a folded block (`>-`) is one command, a
//! line ending in `\` continues on the next, and a comment line stands alone.

use crate::util;

use std::path::Path;

const WORKFLOW: &str = "examples/github/evo.yml";

fn workflow() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(WORKFLOW);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The workflow's text as logical lines: comments alone, block scalars folded as the shell
/// (`\`) or YAML (`>`) would join them.
fn logical_lines(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut folded: Option<usize> = None; // indentation of the `key: >-` line
    let mut continued = false;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let body = line.trim();
        if let Some(comment) = body.strip_prefix('#') {
            out.push(comment.to_string());
            continue;
        }
        if folded.is_some_and(|key| indent <= key || body.is_empty()) {
            folded = None;
        }
        let joined = continued || folded.is_some_and(|_| !out.is_empty());
        let piece = body.strip_suffix('\\').unwrap_or(body).trim_end();
        match (joined, out.last_mut()) {
            (true, Some(last)) => {
                if !last.is_empty() {
                    last.push(' ');
                }
                last.push_str(piece);
            }
            _ => out.push(piece.to_string()),
        }
        continued = body.ends_with('\\');
        if folded.is_none() && (body.ends_with(": >-") || body.ends_with(": >")) {
            folded = Some(indent);
            // The block's first line starts a command of its own.
            out.push(String::new());
        }
    }
    out.into_iter().filter(|l| !l.trim().is_empty()).collect()
}

/// One `evo` command found in the workflow: its subcommand path and its words after it.
#[derive(Debug)]
struct EvoCommand {
    path: Vec<String>,
    words: Vec<String>,
}

fn help(path: &[String]) -> String {
    let out = util::evo().args(path).arg("--help").output().unwrap();
    assert!(
        out.status.success(),
        "evo {path:?} --help\n{}",
        util::text(&out)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommands a help text lists under `Commands:`.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// A word with the prose punctuation and inline-code backticks around it removed, and whether it
/// ends the command (a closing backtick or a comma after it).
fn clean(word: &str) -> (String, bool) {
    let ends = word.ends_with('`') || word.ends_with("`,") || word.ends_with(',');
    let w = word.trim_start_matches('`');
    let w = w.trim_end_matches([',', '`', '.', ';', ')']);
    (w.trim_matches('"').to_string(), ends)
}

const SHELL_ENDS: [&str; 7] = ["|", "||", "&&", ";", ">", "2>", ">>"];

fn evo_commands(lines: &[String]) -> Vec<EvoCommand> {
    let top = subcommands(&help(&[]));
    let mut found = Vec::new();
    for line in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        for (i, word) in words.iter().enumerate() {
            let (w, ends) = clean(word);
            if w != "evo" || ends {
                continue;
            }
            let mut rest = words[i + 1..].iter().map(|w| clean(w)).peekable();
            let mut path = Vec::new();
            let mut choices = top.clone();
            while let Some((next, ends)) = rest.peek().cloned() {
                if !choices.contains(&next) {
                    break;
                }
                rest.next();
                path.push(next);
                choices = subcommands(&help(&path));
                if ends {
                    break;
                }
            }
            if path.is_empty() {
                continue; // prose: "evo stops"
            }
            let mut args = Vec::new();
            for (word, ends) in rest {
                if SHELL_ENDS.contains(&word.as_str()) || word.ends_with(':') {
                    break;
                }
                args.push(word);
                if ends {
                    break;
                }
            }
            found.push(EvoCommand { path, words: args });
        }
    }
    found
}

/// The lines of a help text that document `flag` (up to the next option), if it lists it.
fn flag_help(help: &str, flag: &str) -> Option<String> {
    let is_option = |line: &str| {
        let indent = line.len() - line.trim_start().len();
        indent <= 6 && line.trim_start().starts_with('-')
    };
    let names = |line: &str| -> bool {
        line.split([' ', ',', '=', '<', '['])
            .any(|word| word == flag)
    };
    let mut lines = help.lines().skip_while(|l| !(is_option(l) && names(l)));
    let first = lines.next()?;
    let rest = lines.take_while(|l| !is_option(l));
    Some(
        std::iter::once(first)
            .chain(rest)
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// The values a flag's help lists, as `[possible values: a, b]` or, when they are documented,
/// as a `Possible values:` list of `- a: …` lines.
fn possible_values(section: &str) -> Option<Vec<String>> {
    if let Some(start) = section.find("[possible values: ") {
        let start = start + "[possible values: ".len();
        let end = section[start..].find(']')? + start;
        return Some(
            section[start..end]
                .split(',')
                .map(|v| v.trim().to_string())
                .collect(),
        );
    }
    let list = section.split_once("Possible values:")?.1;
    Some(
        list.lines()
            .filter_map(|l| l.trim().strip_prefix("- "))
            .filter_map(|item| item.split(':').next())
            .map(|v| v.trim().to_string())
            .collect(),
    )
}

/// Every flag of `command` as `(flag, value)`; `value` is the word after it when that is not
/// another flag, or what follows `=`.
fn flags(command: &EvoCommand) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut words = command.words.iter().peekable();
    while let Some(word) = words.next() {
        let Some(flag) = word.strip_prefix("--") else {
            continue;
        };
        match flag.split_once('=') {
            Some((name, value)) => out.push((format!("--{name}"), Some(value.to_string()))),
            None => {
                let value = words.next_if(|w| !w.starts_with('-')).cloned();
                out.push((format!("--{flag}"), value));
            }
        }
    }
    out
}

#[test]
fn every_evo_command_in_the_example_workflow_uses_flags_and_values_evo_accepts() {
    let commands = evo_commands(&logical_lines(&workflow()));
    let names: Vec<String> = commands.iter().map(|c| c.path.join(" ")).collect();
    for wanted in ["confirm", "keygen", "receipt verify"] {
        assert!(
            names.iter().any(|n| n == wanted),
            "no evo {wanted}: {commands:#?}"
        );
    }
    for command in &commands {
        let help = help(&command.path);
        for (flag, value) in flags(command) {
            let section = flag_help(&help, &flag).unwrap_or_else(|| {
                panic!("`evo {}` has no {flag}:\n{help}", command.path.join(" "))
            });
            let (Some(value), Some(allowed)) = (value, possible_values(&section)) else {
                continue;
            };
            for v in value.split(',') {
                assert!(
                    allowed.iter().any(|a| a == v),
                    "`evo {} {flag} {value}`: {v} is not one of {allowed:?}",
                    command.path.join(" ")
                );
            }
        }
    }
}

#[test]
fn the_workflow_confirms_the_pull_request_and_posts_what_the_confirmation_wrote() {
    let text = workflow();
    let commands = evo_commands(&logical_lines(&text));
    let confirm = commands
        .iter()
        .find(|c| c.path == ["confirm"])
        .expect("an evo confirm command");
    let flags = flags(confirm);
    let value = |name: &str| {
        flags
            .iter()
            .find(|(f, _)| f == name)
            .and_then(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("evo confirm without {name} VALUE: {confirm:?}"))
    };
    assert_eq!(value("--fail-on"), "rejected");
    assert_eq!(value("--campaign"), "evo.json");
    let patch = confirm.words.first().expect("the patch");
    assert!(
        text.contains(&format!(" > {patch}\n")),
        "nothing writes {patch}"
    );
    let out = value("--out-dir");
    // evo writes <out-dir>/<run-id>/pr_body.md (and the receipt beside it): tests/ci_e2e.rs.
    for used in [
        format!("hashFiles('{out}/*/pr_body.md')"),
        format!("for body in {out}/*/pr_body.md"),
        format!("path: {out}/"),
    ] {
        assert!(text.contains(&used), "the workflow lacks {used}");
    }
    for needed in [
        "on:\n  pull_request:",
        "fetch-depth: 0",
        "git diff \"origin/$BASE...HEAD\"",
        "BASE: ${{ github.base_ref }}",
        "EVO_SIGNING_KEY: ${{ secrets.EVO_SIGNING_KEY }}",
        "GH_TOKEN: ${{ github.token }}",
        // The comment is the PR text and where the plot and receipt are.
        "cat \"$body\"",
        "artifact `evo-evidence`",
        "gh pr comment \"$PR\" --body-file comment.md",
        "apt-get install -y -q bubblewrap",
        "pull-requests: write",
    ] {
        assert!(text.contains(needed), "the workflow lacks {needed:?}");
    }
}

#[test]
fn the_line_logic_folds_blocks_and_continuations_and_keeps_comments_apart() {
    let yaml = "steps:\n  - run: >-\n      evo confirm a.patch\n      --fail-on rejected\n  # evo keygen --out k\n  - run: |\n      evo bench --baseline x \\\n        --candidate y\n      echo done\n";
    let lines = logical_lines(yaml);
    assert!(
        lines.contains(&"evo confirm a.patch --fail-on rejected".to_string()),
        "{lines:#?}"
    );
    assert!(
        lines.contains(&" evo keygen --out k".to_string()),
        "{lines:#?}"
    );
    assert!(
        lines.contains(&"evo bench --baseline x --candidate y".to_string()),
        "{lines:#?}"
    );
    assert!(lines.contains(&"echo done".to_string()), "{lines:#?}");
    // A flag evo does not have is caught.
    let bad = EvoCommand {
        path: vec!["confirm".into()],
        words: vec!["p.patch".into(), "--fail-when".into(), "rejected".into()],
    };
    let help = help(&bad.path);
    assert!(flag_help(&help, "--fail-when").is_none());
    assert!(flag_help(&help, "--fail-on").is_some());
    let section = flag_help(&help, "--sandbox").unwrap();
    assert_eq!(
        possible_values(&section),
        Some(vec!["auto".into(), "on".into(), "off".into()])
    );
    let section = flag_help(&help, "--fail-on").unwrap();
    assert_eq!(
        possible_values(&section),
        Some(vec!["rejected".into(), "inconclusive".into()])
    );
}
