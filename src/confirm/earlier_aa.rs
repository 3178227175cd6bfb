//! A/A pairs one confirmation of a campaign measured, reused by a later one on the same baseline
//! binaries (docs/design.md §3.5, "Reused A/A pairs"). The A/A pairs run the baseline against a
//! second build of it; nothing of a candidate is in them, so when a later confirmation's
//! baseline and second build are byte for byte the earlier one's, their noise and bias are the
//! same programs' on the same machine, and measuring them again spends about a minute for
//! nothing. The later result records the pairs (raw runs, seeds), whose confirmation measured
//! them, and its own artifacts' digests, so a reader can check the binaries are the same.

use serde::{Deserialize, Serialize};

use crate::evidence::result::{ArtifactDigest, ConfirmResult, TreeLabel};
use crate::measure::record::Pair;

/// What a campaign offers its later confirmations: one earlier confirmation's A/A pairs, per
/// training scenario, with the digests of the binaries they ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EarlierAa {
    /// The confirmation that measured them (its run id, a folder of the campaign's
    /// `confirmations/`).
    pub run_id: String,
    /// Its baseline's and second baseline build's artifacts.
    pub artifacts: Vec<ArtifactDigest>,
    pub scenarios: Vec<EarlierScenario>,
}

/// One training scenario's A/A pairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EarlierScenario {
    pub name: String,
    /// Whether the pairs ran against a second build (else the baseline against itself).
    pub second_build: bool,
    pub aa_pairs: Vec<Pair>,
}

/// The artifacts of the two baseline builds the A/A pairs run, sorted.
pub fn baseline_artifacts(artifacts: &[ArtifactDigest]) -> Vec<ArtifactDigest> {
    let mut out: Vec<ArtifactDigest> = (artifacts.iter())
        .filter(|a| matches!(a.tree, TreeLabel::Baseline | TreeLabel::BaselineAgain))
        .cloned()
        .collect();
    out.sort_by(|a, b| (a.tree.to_string(), &a.path).cmp(&(b.tree.to_string(), &b.path)));
    out
}

/// Seconds of A/A runs `result` measured itself (none for pairs it reused): what a later
/// confirmation that reuses them does not spend.
pub fn measured_aa_s(result: &ConfirmResult) -> f64 {
    (result.evidence.scenarios.iter())
        .filter(|s| s.aa_from.is_none())
        .flat_map(|s| s.aa_pairs.iter())
        .map(|p| p.baseline.wall_s + p.candidate.wall_s)
        .sum()
}

impl EarlierAa {
    /// What `result` offers: its training scenarios' own A/A pairs (none it reused itself), when
    /// its second baseline build's artifacts were digested.
    pub fn of(result: &ConfirmResult) -> Option<EarlierAa> {
        let artifacts = baseline_artifacts(&result.evidence.artifacts);
        if !artifacts.iter().any(|a| a.tree == TreeLabel::BaselineAgain) {
            return None;
        }
        let scenarios: Vec<EarlierScenario> = (result.evidence.scenarios.iter())
            .filter(|s| s.training.is_some() && s.aa_from.is_none() && !s.aa_pairs.is_empty())
            .map(|s| EarlierScenario {
                name: s.name.clone(),
                second_build: s.aa_second_build,
                aa_pairs: s.aa_pairs.clone(),
            })
            .collect();
        (!scenarios.is_empty()).then(|| EarlierAa {
            run_id: result.evidence.run_id.clone(),
            artifacts,
            scenarios,
        })
    }

    /// Whether the two baseline builds that measured the pairs came out byte for byte alike: a
    /// build that does not depend on its tree's path, so a later confirmation's will likely
    /// match and reuse them (a build whose binaries embed their tree's path, in debug information
    /// say, never does).
    pub fn reproducible(&self) -> bool {
        let again = |a: &ArtifactDigest| {
            (self.artifacts.iter()).any(|b| {
                b.tree == TreeLabel::BaselineAgain && b.path == a.path && b.sha256 == a.sha256
            })
        };
        (self.artifacts.iter())
            .filter(|a| a.tree == TreeLabel::Baseline)
            .all(again)
    }

    /// The pairs scenario `name` may reuse: only when this run's baseline and second build
    /// (`artifacts`, this run's digests) are byte for byte the earlier ones, the pairs ran against
    /// a second build as this run's will, and they are as many as this run would measure.
    pub fn pairs_for(
        &self,
        name: &str,
        artifacts: &[ArtifactDigest],
        second_build: bool,
        count: usize,
    ) -> Option<&[Pair]> {
        let same = baseline_artifacts(artifacts);
        if same != self.artifacts || !second_build {
            return None;
        }
        let s = self.scenarios.iter().find(|s| s.name == name)?;
        (s.second_build && s.aa_pairs.len() == count).then_some(s.aa_pairs.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(tree: TreeLabel, sha: &str) -> ArtifactDigest {
        ArtifactDigest {
            tree,
            path: "bin/prog".into(),
            sha256: sha.into(),
        }
    }

    fn earlier(pairs: usize) -> EarlierAa {
        let run = crate::measure::record::RunRecord::exited_ok(1.0);
        EarlierAa {
            run_id: "first".into(),
            artifacts: baseline_artifacts(&[
                digest(TreeLabel::BaselineAgain, "aa"),
                digest(TreeLabel::Baseline, "aa"),
            ]),
            scenarios: vec![EarlierScenario {
                name: "main".into(),
                second_build: true,
                aa_pairs: (0..pairs)
                    .map(|i| {
                        Pair::new(
                            i,
                            crate::measure::record::Order::BaselineFirst,
                            run.clone(),
                            run.clone(),
                        )
                    })
                    .collect(),
            }],
        }
    }

    #[test]
    fn pairs_are_reused_only_on_byte_identical_baseline_binaries() {
        let e = earlier(11);
        let mut now = vec![
            digest(TreeLabel::Baseline, "aa"),
            digest(TreeLabel::Candidate, "cc"),
            digest(TreeLabel::BaselineAgain, "aa"),
        ];
        assert_eq!(
            e.pairs_for("main", &now, true, 11).map(<[_]>::len),
            Some(11)
        );
        assert!(e.reproducible());
        // Another scenario, another count, or no second build this time: measured afresh.
        assert!(e.pairs_for("other", &now, true, 11).is_none());
        assert!(e.pairs_for("main", &now, true, 12).is_none());
        assert!(e.pairs_for("main", &now, false, 11).is_none());
        // A second build that came out different is another A/A arm.
        now[2].sha256 = "ab".into();
        assert!(e.pairs_for("main", &now, true, 11).is_none());
        let mut unlike = e.clone();
        unlike.artifacts = baseline_artifacts(&now);
        assert!(
            !unlike.reproducible(),
            "a build whose binaries embed their tree's path"
        );
        // And without a digested second build there is nothing to compare with.
        now.remove(2);
        assert!(e.pairs_for("main", &now, true, 11).is_none());
    }
}
