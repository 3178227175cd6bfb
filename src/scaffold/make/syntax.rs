//! The line-level syntax of a makefile that `make` reads: logical lines, assignments, rules,
//! words, and the calls of make in a recipe; paths between folders of the tree.

use super::Rule;

/// A recipe line's call of make: the folder it runs in (`-C dir`, `cd dir &&`) and its goals.
#[derive(Debug, PartialEq)]
pub(super) struct SubMake {
    pub dir: Option<String>,
    pub targets: Vec<String>,
}

pub(super) fn sub_make(line: &str) -> Option<SubMake> {
    let line = line.trim_start_matches(['@', '-', '+']);
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| matches!(*w, "$(MAKE)" | "${MAKE}" | "make"))?;
    let mut dir = None;
    if let [cd, d, sep, ..] = words.as_slice() {
        if *cd == "cd" && matches!(*sep, "&&" | ";") {
            dir = Some(d.trim_end_matches(';').to_string());
        }
    }
    let mut targets = Vec::new();
    let mut args = words[at + 1..].iter();
    while let Some(word) = args.next() {
        match *word {
            "&&" | ";" | "||" | "|" => break,
            "-C" | "--directory" => dir = args.next().map(|d| d.to_string()),
            w if w.starts_with("--directory=") => dir = Some(w["--directory=".len()..].into()),
            w if w.starts_with("-C") => dir = Some(w[2..].to_string()),
            w if w.starts_with('-') || w.contains('=') => {}
            w => targets.push(w.trim_end_matches(';').to_string()),
        }
    }
    Some(SubMake { dir, targets })
}

/// `NAME op= value`, for the assignment operators of GNU make (`=`, `:=`, `::=`, `?=`, `+=`,
/// `!=`); the operator is returned without its `=`.
pub(super) fn assignment(line: &str) -> Option<(String, &'static str, &str)> {
    let line = line
        .strip_prefix("override ")
        .or_else(|| line.strip_prefix("export "))
        .unwrap_or(line);
    let eq = line.find('=')?;
    let (lhs, value) = (&line[..eq], &line[eq + 1..]);
    let (name, op) = if let Some(l) = lhs.strip_suffix("::") {
        (l, ":")
    } else if let Some(l) = lhs.strip_suffix(':') {
        (l, ":")
    } else if let Some(l) = lhs.strip_suffix('?') {
        (l, "?")
    } else if let Some(l) = lhs.strip_suffix('+') {
        (l, "+")
    } else if let Some(l) = lhs.strip_suffix('!') {
        (l, "!")
    } else {
        (lhs, "")
    };
    let name = name.trim();
    let plain = !name.is_empty() && !name.contains([' ', '\t', ':', '$', '(']);
    plain.then(|| (name.to_string(), op, value))
}

/// `targets: prerequisites [; recipe]`, not a pattern rule or a target-specific variable.
pub(super) fn rule(line: &str) -> Option<Rule> {
    let colon = line.find(':')?;
    let targets: Vec<String> = line[..colon]
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let rest = line[colon + 1..].trim_start_matches(':');
    let (prereqs, inline) = match rest.split_once(';') {
        Some((p, r)) => (p, Some(r.trim().to_string())),
        None => (rest, None),
    };
    if targets.is_empty() || targets.iter().any(|t| t.contains('%')) || prereqs.contains('=') {
        return None;
    }
    Some(Rule {
        targets,
        prereqs: prereqs.to_string(),
        recipe: inline.into_iter().filter(|r| !r.is_empty()).collect(),
    })
}

/// The words of `text`, split at blanks outside `$(...)` and `${...}`.
pub(super) fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' | '{' if current.ends_with('$') || depth > 0 => depth += 1,
            ')' | '}' if depth > 0 => depth -= 1,
            c if c.is_whitespace() && depth == 0 => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The makefile's lines with backslash-newline continuations joined.
pub(super) fn logical_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        match line.strip_suffix('\\') {
            Some(part) => {
                current.push_str(part);
                current.push(' ');
            }
            None => {
                current.push_str(line);
                lines.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.is_empty() {
        lines.push(current);
    }
    lines
}

pub(super) fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// `rel` taken from the folder `dir` (both relative to the root), with `.` and `..` resolved;
/// `None` when it leaves the root or is absolute.
pub(super) fn normalize(dir: &str, rel: &str) -> Option<String> {
    if rel.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}
