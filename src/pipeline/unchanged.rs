//! Nothing is timed that did not change (docs/design.md §2.2.9), as one judgement for a
//! confirmation and for screening: when every artifact the timed commands run is byte for byte
//! the baseline's, and the patch touches no build configuration and no file a timed command
//! names, the two arms run the same program on the same inputs, and any ratio their runs showed
//! would be noise.

use crate::spec::workload::Scenario;
use crate::tree::PatchSummary;

/// What the judgement looks at.
#[derive(Debug, Clone)]
pub struct TimedPrograms<'a> {
    /// `(artifact path, sha256)` of the baseline's build, and of the candidate's.
    pub baseline: Vec<(&'a str, &'a str)>,
    pub candidate: Vec<(&'a str, &'a str)>,
    /// Whether the patch touches a build configuration file (declared or implicit).
    pub config_changed: bool,
    /// Every path the patch names, before and after ([`patch_paths`]).
    pub patch_paths: Vec<&'a str>,
    /// Every scenario whose runs would be timed.
    pub scenarios: Vec<&'a Scenario>,
}

/// Every path a patch names, before and after the change (a rename names both).
pub fn patch_paths(summary: &PatchSummary) -> Vec<&str> {
    (summary.files.iter())
        .flat_map(|f| [f.old_path.as_deref(), f.new_path.as_deref()])
        .flatten()
        .collect()
}

/// Whether the candidate's timed programs are the baseline's: the same non-empty set of artifact
/// digests, no build configuration changed, and no patched file named (by its file name) in a
/// timed or counted command.
pub fn timed_programs_unchanged(t: &TimedPrograms<'_>) -> bool {
    let (mut baseline, mut candidate) = (t.baseline.clone(), t.candidate.clone());
    baseline.sort_unstable();
    candidate.sort_unstable();
    if baseline.is_empty() || baseline != candidate || t.config_changed {
        return false;
    }
    let commands: Vec<&str> = (t.scenarios.iter())
        .flat_map(|s| {
            [
                Some(s.run.as_str()),
                s.count.as_ref().map(|c| c.run.as_str()),
            ]
        })
        .flatten()
        .collect();
    let named = |path: &str| {
        let name = path.rsplit('/').next().unwrap_or(path);
        commands.iter().any(|c| c.contains(name))
    };
    !t.patch_paths.iter().any(|p| named(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(run: &str) -> Scenario {
        serde_json::from_value(serde_json::json!({
            "name": "s", "role": "training", "run": run, "check": "true", "compare": "exact"
        }))
        .unwrap()
    }

    #[test]
    fn only_identical_artifacts_with_nothing_else_changed_are_unchanged() {
        let s = scenario("./prog --input data.txt");
        let same = TimedPrograms {
            baseline: vec![("prog", "aa")],
            candidate: vec![("prog", "aa")],
            config_changed: false,
            patch_paths: vec!["src/prog.c"],
            scenarios: vec![&s],
        };
        assert!(timed_programs_unchanged(&same));
        let differs = TimedPrograms {
            candidate: vec![("prog", "bb")],
            ..same.clone()
        };
        assert!(!timed_programs_unchanged(&differs));
        let config = TimedPrograms {
            config_changed: true,
            ..same.clone()
        };
        assert!(!timed_programs_unchanged(&config));
        let input = TimedPrograms {
            patch_paths: vec!["src/prog.c", "bench/data.txt"],
            ..same.clone()
        };
        assert!(!timed_programs_unchanged(&input), "a timed input changed");
        let nothing = TimedPrograms {
            baseline: vec![],
            candidate: vec![],
            ..same
        };
        assert!(
            !timed_programs_unchanged(&nothing),
            "no artifact to compare"
        );
    }

    #[test]
    fn a_rename_names_the_path_it_leaves_as_well_as_the_one_it_makes() {
        let diff = b"diff --git a/bench/data.txt b/bench/other.txt\nsimilarity index 100%\n\
                     rename from bench/data.txt\nrename to bench/other.txt\n";
        let summary = crate::tree::inspect_patch(diff).unwrap();
        assert_eq!(patch_paths(&summary), ["bench/data.txt", "bench/other.txt"]);
        // So a timed input renamed away is a change, whichever name the command holds.
        let s = scenario("./prog --input data.txt");
        let renamed = TimedPrograms {
            baseline: vec![("prog", "aa")],
            candidate: vec![("prog", "aa")],
            config_changed: false,
            patch_paths: patch_paths(&summary),
            scenarios: vec![&s],
        };
        assert!(!timed_programs_unchanged(&renamed));
    }
}
