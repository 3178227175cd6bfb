//! The library's layering (docs/design.md §1.2), checked from the source: each top-level module
//! of `src/` may use (`crate::X`) only the modules listed before it in [`LAYERS`], so data flows
//! one way — the stages fill the evidence model, the verifier and the renderers read it — and no
//! two top-level modules depend on each other, directly or round a longer cycle.
//!
//! The uses are read from the text: every `crate::X` and every `X` of a `crate::{X, ..}` outside
//! comments, tests included. A `use` that goes up a layer fails here with the file that has it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first. A module may use the modules listed before it, never one after it.
/// Change this list and docs/design.md §1.2 together.
const LAYERS: &[&[&str]] = &[
    // Foundations: exit codes, the one failure type, paths as shown, pure statistics, Ctrl-C.
    &["exit_codes", "failure", "path", "stats", "interrupt"],
    // The input files, and what the stages run on: processes and their records, the checks, the
    // trees, the machine's facts.
    &["spec", "measure", "check", "tree", "environment"],
    // The evidence model: figures, results, identities, verdict rules, the campaign summary.
    &["evidence"],
    // The signed receipt and its verifier, which read the evidence.
    &["receipt"],
    // What a run is given and settles first: its host (stop, locks, key), the job scheduler,
    // the validated plan, `evo init`'s files.
    &["host", "plan", "scaffold", "search"],
    // The renderers of the evidence.
    &["report"],
    // The stages that produce the evidence: the shared check engine and run directory, the
    // three commands.
    &["pipeline", "bench", "confirm", "fleet", "campaign"],
    // The command line.
    &["live", "cli", "cli_docs", "app"],
];

/// The crate roots, which declare the modules rather than use them.
const ROOTS: &[&str] = &["lib", "main"];

/// Where a module uses another: the first file and line seen.
type Uses = BTreeMap<String, BTreeMap<String, String>>;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to: `src/x.rs` and `src/x/...` are `x`.
fn top_level(src: &Path, file: &Path) -> String {
    let first = file.strip_prefix(src).unwrap().components().next().unwrap();
    let name = first.as_os_str().to_str().unwrap();
    name.strip_suffix(".rs").unwrap_or(name).to_string()
}

/// `line` without its `//` comment (a `//` inside a string literal is kept).
fn code_of(line: &str) -> &str {
    let bytes = line.as_bytes();
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if in_string => i += 1,
            b'"' => in_string = !in_string,
            b'/' if !in_string && bytes.get(i + 1) == Some(&b'/') => return &line[..i],
            _ => {}
        }
        i += 1;
    }
    line
}

fn identifier_at(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The modules `code` names after `crate::`, each with the byte offset where it is named.
fn crate_uses(code: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue; // `some_crate::`, not `crate::`
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a, b::c, d}`: the first name of each item at the group's own depth.
            let mut depth = 0;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if c.is_whitespace() => {}
                    _ if item_start && depth == 0 => {
                        let name = identifier_at(&group[i..]);
                        if !name.is_empty() && name != "self" {
                            found.push((at, name.to_string()));
                        }
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name = identifier_at(rest);
            if !name.is_empty() {
                found.push((at, name.to_string()));
            }
        }
    }
    found
}

/// Every top-level module's uses of the others, read from `src`.
fn uses_in(src: &Path) -> Uses {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut uses = Uses::new();
    for file in files {
        let module = top_level(src, &file);
        if ROOTS.contains(&module.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        // Joined without comments, so a `use crate::{..}` over several lines reads as one.
        let mut code = String::new();
        let mut line_of = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let kept = code_of(line);
            line_of.extend(std::iter::repeat_n(n + 1, kept.len() + 1));
            code.push_str(kept);
            code.push('\n');
        }
        let shown = file.strip_prefix(src.parent().unwrap()).unwrap().display();
        let of_module = uses.entry(module.clone()).or_default();
        for (at, used) in crate_uses(&code) {
            if used != module {
                of_module
                    .entry(used)
                    .or_insert_with(|| format!("{shown}:{}", line_of[at]));
            }
        }
    }
    uses
}

fn top_level_modules(src: &Path) -> BTreeSet<String> {
    std::fs::read_dir(src)
        .unwrap()
        .map(|e| top_level(src, &e.unwrap().path()))
        .filter(|m| !ROOTS.contains(&m.as_str()))
        .collect()
}

/// The position of each module in [`LAYERS`], lowest first.
fn ranks() -> BTreeMap<&'static str, usize> {
    let flat: Vec<&str> = LAYERS.iter().flat_map(|l| l.iter().copied()).collect();
    let ranks: BTreeMap<&str, usize> = flat.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    assert_eq!(
        ranks.len(),
        flat.len(),
        "a module is listed twice in LAYERS"
    );
    ranks
}

/// Uses that go to a module listed after (or equal to) the user, as messages.
fn upward_uses(uses: &Uses, ranks: &BTreeMap<&str, usize>) -> Vec<String> {
    let mut wrong = Vec::new();
    for (module, used) in uses {
        for (other, at) in used {
            let (Some(m), Some(o)) = (ranks.get(module.as_str()), ranks.get(other.as_str())) else {
                continue; // unknown modules are reported on their own
            };
            if o >= m {
                wrong.push(format!("`{module}` uses `{other}`, a higher layer ({at})"));
            }
        }
    }
    wrong
}

/// A cycle among the modules, as `a -> b -> a`, if there is one.
fn a_cycle(uses: &Uses) -> Option<String> {
    fn visit(
        module: &str,
        uses: &Uses,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<String> {
        if let Some(start) = path.iter().position(|m| m == module) {
            let mut cycle = path[start..].to_vec();
            cycle.push(module.to_string());
            return Some(cycle.join(" -> "));
        }
        if done.contains(module) {
            return None;
        }
        path.push(module.to_string());
        for other in uses.get(module).into_iter().flat_map(|u| u.keys()) {
            if let Some(cycle) = visit(other, uses, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(module.to_string());
        None
    }
    let mut done = BTreeSet::new();
    uses.keys()
        .find_map(|m| visit(m, uses, &mut Vec::new(), &mut done))
}

#[test]
fn every_module_of_src_is_in_exactly_one_layer() {
    let ranks = ranks();
    let listed: BTreeSet<String> = ranks.keys().map(|m| m.to_string()).collect();
    let present = top_level_modules(&src());
    let unlisted: Vec<&String> = present.difference(&listed).collect();
    let missing: Vec<&String> = listed.difference(&present).collect();
    assert!(
        unlisted.is_empty() && missing.is_empty(),
        "LAYERS (tests/it/layering.rs) and src/ disagree: not in a layer {unlisted:?}, listed but \
         absent {missing:?}"
    );
}

#[test]
fn no_module_uses_a_higher_layer() {
    let wrong = upward_uses(&uses_in(&src()), &ranks());
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn no_two_modules_depend_on_each_other() {
    let cycle = a_cycle(&uses_in(&src()));
    assert!(
        cycle.is_none(),
        "a cycle between modules: {}",
        cycle.unwrap()
    );
}

#[test]
fn the_evidence_readers_do_not_reach_into_the_stages() {
    let uses = uses_in(&src());
    for reader in ["receipt", "report", "stats", "evidence"] {
        for stage in ["confirm", "campaign", "bench", "pipeline"] {
            let at = uses.get(reader).and_then(|u| u.get(stage));
            assert!(at.is_none(), "`{reader}` uses `{stage}` at {}", at.unwrap());
        }
    }
}

/// The reader above finds what it must: a use of each form, and nothing in comments (a string
/// that names a module counts, which errs on the safe side).
#[test]
fn uses_are_read_in_every_form_and_not_from_comments() {
    let code = "use crate::a::b;\nuse crate::{c, d::{e, f}, self};\nfn g() { crate::h(); }\n\
                let s = \"// crate::not_code\"; // crate::comment\nmy_crate::x;";
    let kept: String = code.lines().map(|l| format!("{}\n", code_of(l))).collect();
    let names: Vec<String> = crate_uses(&kept).into_iter().map(|(_, n)| n).collect();
    assert_eq!(names, ["a", "c", "d", "h", "not_code"]);
}

/// A use that goes up is found, with where it is, and a cycle is named.
#[test]
fn an_upward_use_and_a_cycle_are_caught() {
    let mut uses = Uses::new();
    uses.entry("report".into())
        .or_default()
        .insert("confirm".into(), "src/report/x.rs:3".into());
    uses.entry("confirm".into())
        .or_default()
        .insert("report".into(), "src/confirm/y.rs:9".into());
    let wrong = upward_uses(&uses, &ranks());
    assert_eq!(
        wrong,
        ["`report` uses `confirm`, a higher layer (src/report/x.rs:3)"]
    );
    let cycle = a_cycle(&uses).expect("a cycle");
    assert!(
        cycle == "confirm -> report -> confirm" || cycle == "report -> confirm -> report",
        "{cycle}"
    );
}
