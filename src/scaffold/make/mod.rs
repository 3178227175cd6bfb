//! What a Make project's build makes and which target runs its tests, read from its Makefiles
//! without running make: the root makefile and what it includes, and the sub-Makefiles its
//! recipes call (`$(MAKE) -C lib all`), followed from the default goal.
//!
//! A target is an artifact when a recipe links it (`-o $@` without `-c`), archives it (`ar rcs
//! $@`), or make's built-in rule links it from object files. Names are expanded through the
//! Makefiles' plain variable assignments (and their conditionals, where those variables decide
//! them); a name or folder that still holds a `$` after that (`$(shell ...)`, a variable set on
//! the command line) is not guessed but named in `unsure`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::detect::Artifacts;
use syntax::{assignment, join, logical_lines, normalize, rule, sub_make, words};

mod syntax;

/// The makefile names make reads, in its order of preference.
const MAKEFILE_NAMES: [&str; 3] = ["GNUmakefile", "makefile", "Makefile"];
/// How far includes, variable expansions and sub-makes are followed.
const DEPTH: usize = 12;
/// How many (folder, target) pairs one reading visits at most.
const VISITS: usize = 2000;

/// What `evo init` read of a Make project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MakeProject {
    /// `test` or `check`: the root makefile's rule that runs the tests, when it has one.
    pub test_target: Option<String>,
    pub artifacts: Artifacts,
    /// A compiler the Makefiles call by its absolute path (`CC = /usr/bin/gcc`), which evo's
    /// sanitizer compilers on the PATH cannot stand in for.
    pub absolute_compiler: Option<String>,
}

impl MakeProject {
    /// Reads `root/makefile` and what it leads to.
    pub fn read(root: &Path, makefile: &str) -> MakeProject {
        let mut reader = Reader {
            root,
            files: BTreeMap::new(),
            visited: BTreeSet::new(),
            artifacts: Artifacts::default(),
        };
        let top = reader.load_file("", makefile);
        let test_target = ["test", "check"]
            .into_iter()
            .find(|name| top.rule(name).is_some())
            .map(str::to_string);
        match top.default_goal.clone() {
            Some(goal) => reader.walk(&top, &goal, 0),
            None => reader
                .artifacts
                .doubt(format!("{makefile} has no rule to build by default")),
        }
        if reader.artifacts.paths.is_empty() && reader.artifacts.unsure.is_empty() {
            reader.artifacts.doubt(format!(
                "no rule reached from the default goal of {makefile} links a program or \
                 archives a library under a name evo could read"
            ));
        }
        MakeProject {
            test_target,
            absolute_compiler: reader.absolute_compiler(),
            artifacts: reader.artifacts,
        }
    }
}

/// One rule: its targets and prerequisites as written, and its recipe lines.
#[derive(Debug, Clone, Default)]
struct Rule {
    targets: Vec<String>,
    prereqs: String,
    recipe: Vec<String>,
}

/// One makefile with everything it includes.
#[derive(Debug, Clone, Default)]
struct Makefile {
    /// Its folder, relative to the root ("" for the root).
    dir: String,
    vars: BTreeMap<String, String>,
    rules: Vec<Rule>,
    phony: BTreeSet<String>,
    default_goal: Option<String>,
}

impl Makefile {
    /// Every rule for `target` (names compared after expansion), merged: prerequisites joined,
    /// the recipe of the one that has it.
    fn rule(&self, target: &str) -> Option<Rule> {
        let mut found: Option<Rule> = None;
        for rule in &self.rules {
            if !rule.targets.iter().any(|t| self.expand(t) == target) {
                continue;
            }
            let merged = found.get_or_insert_with(Rule::default);
            merged.prereqs = format!("{} {}", merged.prereqs, rule.prereqs);
            if merged.recipe.is_empty() {
                merged.recipe = rule.recipe.clone();
            }
        }
        found
    }

    /// `text` with `$(NAME)` and `${NAME}` replaced by the plain variables of this makefile;
    /// anything else (`$@`, functions, unknown names) is left as written.
    fn expand(&self, text: &str) -> String {
        self.expand_at(text, 0)
    }

    fn expand_at(&self, text: &str, depth: usize) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            let close = match after.chars().next() {
                Some('(') => ')',
                Some('{') => '}',
                _ => {
                    out.push('$');
                    rest = after;
                    continue;
                }
            };
            let Some(end) = after.find(close) else {
                out.push_str(&rest[at..]);
                return out;
            };
            let name = &after[1..end];
            match self.vars.get(name) {
                Some(value) if depth < DEPTH && !name.contains([' ', '$']) => {
                    out.push_str(&self.expand_at(value, depth + 1));
                }
                _ => out.push_str(&rest[at..at + 2 + end]),
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        out
    }
}

struct Reader<'a> {
    root: &'a Path,
    /// Makefiles read so far, by folder.
    files: BTreeMap<String, Makefile>,
    visited: BTreeSet<(String, String)>,
    artifacts: Artifacts,
}

impl Reader<'_> {
    fn load_file(&mut self, dir: &str, name: &str) -> Makefile {
        let mut file = Makefile {
            dir: dir.to_string(),
            ..Makefile::default()
        };
        self.parse_into(&mut file, &join(dir, name), 0);
        self.files.insert(dir.to_string(), file.clone());
        file
    }

    /// The first compiler named by an absolute path in a makefile read: `CC`, `CXX`, `LD` or
    /// the first word of a recipe line.
    fn absolute_compiler(&self) -> Option<String> {
        let is_compiler = |word: &str| {
            let name = word.rsplit('/').next().unwrap_or("");
            word.starts_with('/')
                && ["cc", "gcc", "clang", "c++", "g++", "clang++"]
                    .iter()
                    .any(|c| {
                        name == *c
                            || name
                                .strip_suffix(|d: char| d.is_ascii_digit() || d == '-')
                                .is_some_and(|n| n.starts_with(c))
                    })
        };
        for file in self.files.values() {
            let vars = ["CC", "CXX", "LD"].iter().filter_map(|v| file.vars.get(*v));
            let recipes = file.rules.iter().flat_map(|r| r.recipe.iter());
            for text in vars.chain(recipes) {
                let expanded = file.expand(text);
                let first = expanded
                    .trim_start_matches(['@', '-', '+'])
                    .split_whitespace()
                    .next();
                if let Some(word) = first.filter(|w| is_compiler(w)) {
                    return Some(word.to_string());
                }
            }
        }
        None
    }

    /// The makefile make would read in `dir`, read once.
    fn load_dir(&mut self, dir: &str) -> Option<Makefile> {
        if let Some(file) = self.files.get(dir) {
            return Some(file.clone());
        }
        let name = MAKEFILE_NAMES
            .into_iter()
            .find(|n| self.root.join(join(dir, n)).is_file())?;
        Some(self.load_file(dir, name))
    }

    fn parse_into(&mut self, file: &mut Makefile, path: &str, depth: usize) {
        let Ok(text) = std::fs::read_to_string(self.root.join(path)) else {
            return;
        };
        let mut in_define = false;
        // The conditionals around the line: `Some(taken)` when make's choice can be read from
        // plain variables, `None` when not (both branches are then read, the later assignment
        // winning: a guess, usually a Makefile's default branch).
        let mut conditions: Vec<Option<bool>> = Vec::new();
        for line in logical_lines(&text) {
            let live = conditions.iter().all(|c| *c != Some(false));
            if let Some(recipe) = line.strip_prefix('\t') {
                if let Some(rule) = file.rules.last_mut().filter(|_| live) {
                    rule.recipe.push(recipe.trim().to_string());
                }
                continue;
            }
            let line = line.split('#').next().unwrap_or("").trim_end();
            let trimmed = line.trim_start();
            let word = trimmed.split_whitespace().next().unwrap_or("");
            let rest = trimmed[word.len()..].trim();
            if in_define {
                in_define = word != "endef";
                continue;
            }
            match word {
                "ifeq" | "ifneq" | "ifdef" | "ifndef" => {
                    conditions.push(condition(file, word, rest));
                    continue;
                }
                "else" => {
                    if let Some(last) = conditions.last_mut() {
                        *last = match (*last, rest.split_once(char::is_whitespace)) {
                            (Some(true), _) => Some(false),
                            (Some(false), None) => Some(true),
                            (Some(false), Some((w, r))) => condition(file, w, r.trim()),
                            (None, _) => None,
                        };
                    }
                    continue;
                }
                "endif" => {
                    conditions.pop();
                    continue;
                }
                _ if !live => continue,
                "" => continue,
                "define" => {
                    in_define = true;
                    continue;
                }
                "include" | "-include" | "sinclude" => {
                    if depth < DEPTH {
                        let names = file.expand(trimmed[word.len()..].trim());
                        for name in names.split_whitespace().filter(|n| !n.contains('$')) {
                            self.parse_into(file, &join(&file.dir.clone(), name), depth + 1);
                        }
                    }
                    continue;
                }
                _ => {}
            }
            if let Some((name, op, value)) = assignment(trimmed) {
                let value = value.trim().to_string();
                match op {
                    "+" => {
                        let old = file.vars.get(&name).cloned().unwrap_or_default();
                        file.vars.insert(name, format!("{old} {value}"));
                    }
                    "?" => {
                        file.vars.entry(name).or_insert(value);
                    }
                    ":" => {
                        let value = file.expand(&value);
                        file.vars.insert(name, value);
                    }
                    _ => {
                        file.vars.insert(name, value);
                    }
                }
                continue;
            }
            if let Some(rule) = rule(trimmed) {
                if rule.targets.iter().any(|t| t == ".PHONY") {
                    let names = file.expand(&rule.prereqs);
                    file.phony
                        .extend(names.split_whitespace().map(str::to_string));
                    continue;
                }
                if file.default_goal.is_none() {
                    file.default_goal = rule
                        .targets
                        .iter()
                        .map(|t| file.expand(t))
                        .find(|t| !t.starts_with('.') && !t.contains(['%', '$']));
                }
                file.rules.push(rule);
            }
        }
        if let Some(goal) = file.vars.get(".DEFAULT_GOAL") {
            file.default_goal = Some(file.expand(goal));
        }
    }

    /// Follows `target` of `file`: an artifact when its rule makes it, otherwise its
    /// prerequisites and the sub-makes of its recipe.
    fn walk(&mut self, file: &Makefile, target: &str, depth: usize) {
        if depth > DEPTH || self.visited.len() > VISITS {
            return;
        }
        if !self.visited.insert((file.dir.clone(), target.to_string())) {
            return;
        }
        let Some(rule) = file.rule(target) else {
            return;
        };
        let recipe: Vec<String> = (rule.recipe.iter())
            .map(|line| file.expand(line).replace("$@", target))
            .collect();
        let prereqs = file.expand(&rule.prereqs);
        if !file.phony.contains(target) && makes(target, &recipe, &prereqs) {
            match normalize(&file.dir, target) {
                Some(path) => self.artifacts.add(path),
                None => self
                    .artifacts
                    .doubt(format!("`{target}` lies outside the repository")),
            }
            return;
        }
        for prereq in words(&prereqs) {
            if prereq.contains('$') {
                self.artifacts.doubt(format!(
                    "the prerequisite `{prereq}` of `{target}` (in {}) holds a variable or \
                     function evo could not read",
                    join(&file.dir, "Makefile")
                ));
            } else {
                self.walk(file, &prereq, depth + 1);
            }
        }
        for line in &recipe {
            let Some(sub) = sub_make(line) else { continue };
            let Some(dir) = sub.dir.as_deref().map_or(Some(file.dir.clone()), |d| {
                (!d.contains('$'))
                    .then(|| normalize(&file.dir, d))
                    .flatten()
            }) else {
                self.artifacts.doubt(format!(
                    "the recipe of `{target}` runs make in a folder evo could not read: `{line}`"
                ));
                continue;
            };
            let Some(sub_file) = self.load_dir(&dir) else {
                self.artifacts
                    .doubt(format!("`{line}` runs make where there is no makefile"));
                continue;
            };
            let goals = match sub.targets.is_empty() {
                true => sub_file.default_goal.iter().cloned().collect(),
                false => sub.targets,
            };
            for goal in goals {
                self.walk(&sub_file, &goal, depth + 1);
            }
        }
    }
}

/// Whether make takes the branch of `ifeq`, `ifneq`, `ifdef` or `ifndef` with `args`, when
/// that can be read from the makefile's plain variables.
fn condition(file: &Makefile, word: &str, args: &str) -> Option<bool> {
    let taken = match word {
        "ifdef" | "ifndef" => {
            let name = args.trim();
            let defined = match file.vars.get(name) {
                Some(value) => !plain_value(file, value)?.trim().is_empty(),
                None => BUILT_IN.contains(&name),
            };
            (word == "ifdef") == defined
        }
        "ifeq" | "ifneq" => {
            let (a, b) = comparands(args)?;
            let (a, b) = (plain_value(file, &a)?, plain_value(file, &b)?);
            (word == "ifeq") == (a.trim() == b.trim())
        }
        _ => return None,
    };
    Some(taken)
}

/// Variables make defines by itself, whose values evo does not know.
const BUILT_IN: &[&str] = &[
    "CC",
    "CXX",
    "CPP",
    "AR",
    "AS",
    "LD",
    "RM",
    "MAKE",
    "MAKEFLAGS",
];

/// `text` expanded as make would in a plain environment: a variable no makefile sets is empty;
/// `None` when a function, a built-in variable or anything else unread remains.
fn plain_value(file: &Makefile, text: &str) -> Option<String> {
    let expanded = file.expand(text);
    let mut out = String::new();
    let mut rest = expanded.as_str();
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let close = match after.chars().next()? {
            '(' => ')',
            '{' => '}',
            _ => return None,
        };
        let end = after.find(close)?;
        let name = &after[1..end];
        let simple =
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !simple || BUILT_IN.contains(&name) {
            return None;
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Some(out)
}

/// The two sides of `(a,b)`, `"a" "b"` or `'a' 'b'`.
fn comparands(args: &str) -> Option<(String, String)> {
    if let Some(inner) = args.strip_prefix('(').and_then(|a| a.strip_suffix(')')) {
        let mut depth = 0usize;
        for (i, c) in inner.char_indices() {
            match c {
                '(' | '{' => depth += 1,
                ')' | '}' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => return Some((inner[..i].into(), inner[i + 1..].into())),
                _ => {}
            }
        }
        return None;
    }
    let quoted = strings_quoted(args);
    match quoted.as_slice() {
        [a, b] => Some((a.clone(), b.clone())),
        _ => None,
    }
}

fn strings_quoted(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while let Some(quote) = rest.chars().next().filter(|c| matches!(c, '"' | '\'')) {
        let Some(end) = rest[1..].find(quote) else {
            break;
        };
        out.push(rest[1..1 + end].to_string());
        rest = rest[end + 2..].trim_start();
    }
    out
}

/// Whether a rule's expanded recipe (or make's built-in rule, for none) makes `target` as a
/// program or a library: a link to it, an archive of it, or objects linked by make itself.
fn makes(target: &str, recipe: &[String], prereqs: &str) -> bool {
    if target.contains('$') || target.ends_with(".o") {
        return false;
    }
    if recipe.is_empty() {
        let mut objects = prereqs.split_whitespace().peekable();
        return objects.peek().is_some() && objects.all(|p| p.ends_with(".o"));
    }
    recipe.iter().any(|line| {
        let words: Vec<&str> = line.split_whitespace().collect();
        let links = words.windows(2).any(|w| w[0] == "-o" && w[1] == target)
            || words.contains(&format!("-o{target}").as_str());
        let archives = target.ends_with(".a")
            && words
                .iter()
                .any(|w| *w == "ar" || w.ends_with("/ar") || *w == "$(AR)")
            && words.contains(&target);
        (links && !words.contains(&"-c")) || archives
    })
}

#[cfg(test)]
mod tests;
