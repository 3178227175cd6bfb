//! Where a counted run's instructions went: the self cost of each function and each source line,
//! read from the callgrind files of one run (`callgrind::count` writes them). The search gives
//! the baseline's hottest functions and lines to the agents (docs/design.md §2.9).
//!
//! The callgrind format (one file per traced process): `fl=`/`fi=`/`fe=` name the source file,
//! `fn=` the function, `ob=` the object; a name may be compressed to `(id) name` once and `(id)`
//! after. A cost line is positions then costs; a position is absolute, `+n`/`-n` from the last
//! cost line's, or `*` for the same. The cost line after `calls=` is the call's inclusive cost,
//! which belongs to the callee: it moves the position but adds no self cost.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use super::error::{CallgrindError, DumpError};

/// The self instructions of one function (its `fl=` file and `ob=` object as callgrind names
/// them), over every traced process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionCost {
    pub object: String,
    pub file: String,
    pub name: String,
    pub instructions: u64,
}

/// The self instructions of one source line (inlined code counts where its source is).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineCost {
    pub file: String,
    pub line: u64,
    pub instructions: u64,
}

/// A whole run's profile: its total and every function and line with a cost, costliest first.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CallgrindProfile {
    /// The `summary:` (or `totals:`) instructions, summed over every file.
    pub instructions: u64,
    pub functions: Vec<FunctionCost>,
    pub lines: Vec<LineCost>,
}

/// What one file adds up to, before sorting.
#[derive(Default)]
struct Tally {
    instructions: u64,
    functions: BTreeMap<(String, String, String), u64>,
    lines: BTreeMap<(String, u64), u64>,
}

/// Names compressed as `(id) name`, one table per kind (files, functions, objects).
#[derive(Default)]
struct Names(HashMap<String, String>);

impl Names {
    /// `(12) main` defines and returns `main`; `(12)` returns what 12 was defined as.
    fn resolve(&mut self, value: &str) -> String {
        let value = value.trim();
        let Some(rest) = value.strip_prefix('(') else {
            return value.to_string();
        };
        let Some((id, name)) = rest.split_once(')') else {
            return value.to_string();
        };
        let name = name.trim();
        if name.is_empty() {
            self.0.get(id).cloned().unwrap_or_default()
        } else {
            self.0.insert(id.to_string(), name.to_string());
            name.to_string()
        }
    }
}

/// Reads every callgrind file in `dir` into one profile. Anything in the folder that is not a
/// callgrind dump refuses it, as `callgrind::sum_callgrind_totals` does.
pub fn read_dir(dir: &Path) -> Result<CallgrindProfile, CallgrindError> {
    let mut tally = Tally::default();
    for (name, text) in super::callgrind::dumps(dir)? {
        add_file(&text, &mut tally).map_err(|source| CallgrindError::Dump { name, source })?;
    }
    Ok(finish(tally))
}

/// One callgrind file's profile.
pub fn parse(text: &str) -> Result<CallgrindProfile, DumpError> {
    let mut tally = Tally::default();
    add_file(text, &mut tally)?;
    Ok(finish(tally))
}

fn finish(tally: Tally) -> CallgrindProfile {
    let mut functions: Vec<FunctionCost> = (tally.functions.into_iter())
        .map(|((object, file, name), instructions)| FunctionCost {
            object,
            file,
            name,
            instructions,
        })
        .collect();
    functions.sort_by_key(|f| std::cmp::Reverse(f.instructions));
    let mut lines: Vec<LineCost> = (tally.lines.into_iter())
        .map(|((file, line), instructions)| LineCost {
            file,
            line,
            instructions,
        })
        .collect();
    lines.sort_by_key(|l| std::cmp::Reverse(l.instructions));
    CallgrindProfile {
        instructions: tally.instructions,
        functions,
        lines,
    }
}

/// Where the reader stands in one file.
#[derive(Default)]
struct Cursor {
    files: Names,
    functions: Names,
    objects: Names,
    object: String,
    /// The current function's file (`fl=`) and the current line's (`fi=`/`fe=` for inlined code).
    fn_file: String,
    line_file: String,
    function: String,
    /// The last cost line's positions, for relative ones.
    last: Vec<i64>,
    /// The next cost line is a call's inclusive cost.
    call_cost_next: bool,
}

fn add_file(text: &str, tally: &mut Tally) -> Result<(), DumpError> {
    let mut positions = vec!["line".to_string()];
    let mut ir_column = 0;
    let mut summary = None;
    let mut totals = None;
    let mut at = Cursor::default();
    for raw in text.lines() {
        let line = raw.trim_end();
        let starts_cost = (line.chars().next())
            .is_some_and(|c| c.is_ascii_digit() || matches!(c, '+' | '-' | '*'));
        if starts_cost {
            add_cost_line(line, &positions, ir_column, &mut at, tally)?;
            continue;
        }
        let Some((key, value)) = split_key(line) else {
            continue;
        };
        match key {
            "positions" => positions = value.split_whitespace().map(str::to_string).collect(),
            "events" => {
                let events: Vec<&str> = value.split_whitespace().collect();
                ir_column = events.iter().position(|e| *e == "Ir").unwrap_or(0);
            }
            "summary" => summary = first_number(value, ir_column),
            "totals" => totals = first_number(value, ir_column),
            "ob" => at.object = at.objects.resolve(value),
            "cob" => drop(at.objects.resolve(value)),
            "fl" => {
                at.fn_file = at.files.resolve(value);
                at.line_file = at.fn_file.clone();
            }
            "fi" | "fe" => at.line_file = at.files.resolve(value),
            "cfi" | "cfl" => drop(at.files.resolve(value)),
            "fn" => {
                at.function = at.functions.resolve(value);
                at.line_file = at.fn_file.clone();
            }
            "cfn" => drop(at.functions.resolve(value)),
            "calls" => at.call_cost_next = true,
            _ => {}
        }
    }
    let total = summary.or(totals).ok_or(DumpError::NoTotal)?;
    tally.instructions = tally.instructions.saturating_add(total);
    Ok(())
}

/// `key=value` or `key: value` of a specification line.
fn split_key(line: &str) -> Option<(&str, &str)> {
    let cut = line.find(['=', ':'])?;
    let key = &line[..cut];
    key.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
        .then_some((key, &line[cut + 1..]))
}

fn first_number(value: &str, column: usize) -> Option<u64> {
    value.split_whitespace().nth(column)?.parse().ok()
}

fn add_cost_line(
    line: &str,
    positions: &[String],
    ir_column: usize,
    at: &mut Cursor,
    tally: &mut Tally,
) -> Result<(), DumpError> {
    let mut words = line.split_whitespace();
    let line_of = || line.to_string();
    at.last.resize(positions.len(), 0);
    for last in at.last.iter_mut() {
        let word = words
            .next()
            .ok_or_else(|| DumpError::NoPositions { line: line_of() })?;
        *last = position(word, *last).ok_or_else(|| DumpError::Position { line: line_of() })?;
    }
    let costs: Vec<&str> = words.collect();
    let ir = match costs.get(ir_column) {
        Some(word) => word
            .parse::<u64>()
            .map_err(|_| DumpError::Cost { line: line_of() })?,
        None => 0,
    };
    if std::mem::take(&mut at.call_cost_next) || ir == 0 {
        return Ok(());
    }
    let key = (at.object.clone(), at.fn_file.clone(), at.function.clone());
    let f = tally.functions.entry(key).or_default();
    *f = f.saturating_add(ir);
    if let Some(column) = positions.iter().position(|p| p == "line") {
        let number = u64::try_from(at.last[column]).unwrap_or(0);
        let l = tally
            .lines
            .entry((at.line_file.clone(), number))
            .or_default();
        *l = l.saturating_add(ir);
    }
    Ok(())
}

/// One position: absolute (decimal or `0x` hex), relative to `last`, or `*` for `last`.
fn position(word: &str, last: i64) -> Option<i64> {
    let number = |s: &str| match s.strip_prefix("0x") {
        Some(hex) => i64::from_str_radix(hex, 16).ok(),
        None => s.parse::<i64>().ok(),
    };
    match word.as_bytes().first().copied()? {
        b'*' => Some(last),
        b'+' => Some(last.saturating_add(number(&word[1..])?)),
        b'-' => Some(last.saturating_sub(number(&word[1..])?)),
        _ => number(word),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two functions, one inlined header line, a call whose inclusive cost must not count as the
    /// caller's, compressed names and relative positions.
    const DUMP: &str = "# callgrind format
version: 1
creator: callgrind-3.19.0
positions: line
events: Ir
summary: 1000

ob=(1) /w/prog
fl=(1) /w/tree/prog.c
fn=(1) slow_hash
14 600
+1 200

fn=(2) main
30 50
fi=(2) /usr/include/stdlib.h
369 30
fe=(1)
-339 10
cfn=(1)
calls=100 14
* 800
+2 5

ob=(2) /usr/lib/libc.so.6
fl=(3) ???
fn=(3) memcpy
0 105
fl=(1)
fn=(1)
16 0
";

    #[test]
    fn self_costs_by_function_and_line_and_the_call_cost_goes_to_the_callee() {
        let p = parse(DUMP).unwrap();
        assert_eq!(p.instructions, 1000);
        let f: Vec<(&str, &str, u64)> = (p.functions.iter())
            .map(|f| (f.name.as_str(), f.file.as_str(), f.instructions))
            .collect();
        assert_eq!(
            f,
            [
                ("slow_hash", "/w/tree/prog.c", 800),
                ("memcpy", "???", 105),
                ("main", "/w/tree/prog.c", 95)
            ]
        );
        assert_eq!(p.functions[1].object, "/usr/lib/libc.so.6");
        let l: Vec<(&str, u64, u64)> = (p.lines.iter())
            .map(|l| (l.file.as_str(), l.line, l.instructions))
            .collect();
        assert_eq!(
            l,
            [
                ("/w/tree/prog.c", 14, 600),
                ("/w/tree/prog.c", 15, 200),
                ("???", 0, 105),
                ("/w/tree/prog.c", 30, 60),
                ("/usr/include/stdlib.h", 369, 30),
                ("/w/tree/prog.c", 32, 5)
            ]
        );
    }

    #[test]
    fn instruction_positions_and_other_events_are_read_by_their_columns() {
        let text = "positions: instr line\nevents: Dr Ir\nsummary: 7 40\nfl=a.c\nfn=f\n\
                    0x10 3 1 30\n+0x4 +1 2 10\n";
        let p = parse(text).unwrap();
        assert_eq!(p.instructions, 40);
        assert_eq!(p.functions[0].instructions, 40);
        let lines: Vec<u64> = p.lines.iter().map(|l| l.line).collect();
        assert_eq!(lines, [3, 4]);
    }

    #[test]
    fn a_file_that_is_not_a_dump_is_refused() {
        assert!(parse("hello\n").is_err());
        assert!(parse("summary: 5\nfn=f\n12 x\n").is_err());
    }

    #[test]
    fn every_file_of_a_folder_is_summed_and_a_stranger_refuses_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("cg.1"), DUMP).unwrap();
        std::fs::write(dir.path().join("cg.2"), "summary: 20\nfl=b.c\nfn=g\n3 20\n").unwrap();
        let p = read_dir(dir.path()).unwrap();
        assert_eq!(p.instructions, 1020);
        assert_eq!(p.functions.len(), 4);
        std::os::unix::fs::symlink("/dev/null", dir.path().join("cg.3")).unwrap();
        assert!(read_dir(dir.path()).is_err());
    }
}
