//! A fixture repository with its workload committed, and a campaign folder beside it, for tests
//! that `evo confirm` one patch at a time and read its `result.json`.

use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;

use super::{evo, fixture_repo, patch_by_editing, text, write};

pub struct ConfirmFixture {
    pub dir: tempfile::TempDir,
    pub repo: PathBuf,
    pub camp: PathBuf,
}

impl ConfirmFixture {
    /// `tests/fixtures/<fixture>` as a repository with `workload` committed at
    /// `evo/workload.json`, and `campaign` as `camp/campaign.json`.
    pub fn new(fixture: &str, workload: &str, campaign: &str) -> ConfirmFixture {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        fixture_repo(fixture, &repo);
        write(&repo.join("evo/workload.json"), workload);
        super::git(&repo, &["add", "-A"]);
        super::git(&repo, &["commit", "-q", "-m", "workload"]);
        let camp = dir.path().join("camp");
        write(&camp.join("campaign.json"), campaign);
        ConfirmFixture { dir, repo, camp }
    }

    /// `evo confirm` of the patch `edit` makes, written as `camp/<name>`: its output and
    /// `result.json`.
    pub fn confirm(&self, name: &str, edit: (&str, &str, &str)) -> (Output, Value) {
        let patch = self.camp.join(name);
        write(&patch, &patch_by_editing(&self.repo, &[edit]));
        let out = evo()
            .arg("confirm")
            .arg(&patch)
            .arg("--campaign")
            .arg(self.camp.join("campaign.json"))
            .arg("--work-dir")
            .arg(self.dir.path().join("work"))
            .output()
            .unwrap();
        let (_, result) = super::first_result(&self.camp)
            .unwrap_or_else(|| panic!("no result.json\n{}", text(&out)));
        (out, result)
    }
}

/// A result's reasons, one a line.
pub fn reasons(r: &Value) -> String {
    (r["reasons"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join("\n")
}
