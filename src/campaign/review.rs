//! What a finished campaign leaves for review: the one receipt to check (the accepted
//! candidate's, else the last confirmation's), what that receipt claims, the key `--key` must
//! name to verify it, and the PR text beside it. `evo campaign run` prints the commands that
//! check it and puts the paths on its `final` line.

use std::path::{Path, PathBuf};

use super::CampaignOutcome;
use crate::evidence::summary::{Row, Summary};
use crate::plan::CampaignPlan;
use crate::receipt::keys::{KeySource, VerifyWith};
use crate::report::terminal::Claim;

/// The receipt a campaign leaves for review, and how to check it.
#[derive(Debug)]
pub struct Review {
    pub receipt: PathBuf,
    /// The verdict and tier its confirmation reached, and the patch copy beside it; `None` when
    /// the summary does not record them.
    pub claim: Option<Claim>,
    /// What `--key` must name to verify it.
    pub key: VerifyWith,
    /// The PR text written beside the receipt, when there is one.
    pub pr_body: Option<PathBuf>,
}

impl CampaignOutcome {
    /// The receipt to review, what it claims and the key that checks it; `None` when nothing
    /// was confirmed (or the confirmation left no receipt).
    pub fn review(&self, plan: &CampaignPlan) -> Option<Review> {
        let receipt = receipt_of(&self.summary, &self.run_dir)?;
        Some(Review {
            claim: claim_of(&self.summary, &receipt),
            key: key_for(plan, &receipt),
            pr_body: Some(receipt.with_file_name("pr_body.md")).filter(|p| p.is_file()),
            receipt,
        })
    }

    /// The tier the accepted candidate's confirmation reached, if one was accepted.
    pub fn accepted_tier(&self) -> Option<crate::stats::Tier> {
        let summary = &self.summary;
        let accepted = summary.accepted?;
        let row = summary.rows.iter().find(|r| r.index == accepted)?;
        row.confirmation_tier
    }
}

/// The accepted candidate's receipt, else the last confirmation's, when the file is there.
fn receipt_of(summary: &Summary, run_dir: &Path) -> Option<PathBuf> {
    let confirmed = |r: &&Row| r.confirmation_run_dir.is_some();
    let row = match summary.accepted {
        Some(i) => summary.rows.iter().find(|r| r.index == i),
        None => summary.rows.iter().rev().find(confirmed),
    }?;
    let receipt = run_dir
        .join(row.confirmation_run_dir.as_deref()?)
        .join(crate::receipt::RECEIPT_FILE);
    receipt.is_file().then_some(receipt)
}

/// What `receipt` claims: the verdict and tier of the confirmation whose folder holds it, and
/// the patch copy beside it.
fn claim_of(summary: &Summary, receipt: &Path) -> Option<Claim> {
    let dir = receipt.parent()?;
    let row = summary.rows.iter().find(|r| {
        r.confirmation_run_dir
            .as_deref()
            .is_some_and(|d| dir.ends_with(d))
    })?;
    Some(Claim {
        verdict: row.confirmation_verdict?,
        tier: row.confirmation_tier?,
        patch: dir.join("candidate.patch"),
    })
}

/// What `--key` must name to verify `receipt`, from the same decision that chose the key its
/// confirmations signed with ([`KeySource::for_campaign`]).
fn key_for(plan: &CampaignPlan, receipt: &Path) -> VerifyWith {
    let key_file = plan.key_file();
    let untrusted = plan.key_untrusted(None);
    let Ok(source) = KeySource::for_campaign(key_file.as_deref(), &untrusted) else {
        return VerifyWith::Found;
    };
    let id = std::fs::read(receipt)
        .ok()
        .and_then(|bytes| {
            crate::receipt::dsse::named_key_ids(&bytes)
                .into_iter()
                .next()
        })
        .unwrap_or_else(|| "the signing key".to_string());
    source.verify_with(&id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::result::Verdict;
    use crate::stats::Tier;

    fn row(index: usize, confirmed: Option<(Verdict, Tier)>) -> Row {
        Row {
            confirmation_run_dir: confirmed.map(|_| format!("confirmations/{index}")),
            confirmation_verdict: confirmed.map(|c| c.0),
            confirmation_tier: confirmed.map(|c| c.1),
            ..Row::screened_for_test(index)
        }
    }

    fn summary(rows: Vec<Row>, accepted: Option<usize>) -> Summary {
        Summary {
            run_id: "r1".into(),
            candidates_tried: rows.len(),
            rows,
            build_s: 0.0,
            screened_in_jobs: 0,
            screening_run_s: 0.0,
            total_s: 0.0,
            search_ended: None,
            cost_total: None,
            accepted,
        }
    }

    /// A run folder with a receipt in each confirmation's folder.
    fn run_dir(summary: &Summary) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for d in summary
            .rows
            .iter()
            .filter_map(|r| r.confirmation_run_dir.as_ref())
        {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
            let receipt = dir.path().join(d).join(crate::receipt::RECEIPT_FILE);
            std::fs::write(receipt, "{}").unwrap();
        }
        dir
    }

    #[test]
    fn the_receipt_to_review_is_the_accepted_candidates_else_the_last_confirmations() {
        let rejected = Some((Verdict::Rejected, Tier::Rejected));
        let accepted = Some((Verdict::Accepted, Tier::Measured));
        let s = summary(
            vec![row(1, accepted), row(2, rejected), row(3, None)],
            Some(1),
        );
        let dir = run_dir(&s);
        let receipt = receipt_of(&s, dir.path()).unwrap();
        assert!(receipt.starts_with(dir.path().join("confirmations/1")));
        let claim = claim_of(&s, &receipt).unwrap();
        assert_eq!(
            (claim.verdict, claim.tier),
            (Verdict::Accepted, Tier::Measured)
        );
        assert_eq!(
            claim.patch,
            dir.path().join("confirmations/1/candidate.patch")
        );

        let s = summary(vec![row(1, rejected), row(2, rejected), row(3, None)], None);
        let receipt = receipt_of(&s, dir.path()).unwrap();
        assert!(receipt.starts_with(dir.path().join("confirmations/2")));
    }

    #[test]
    fn nothing_confirmed_or_no_receipt_file_leaves_nothing_to_review() {
        let s = summary(vec![row(1, None)], None);
        let dir = run_dir(&s);
        assert_eq!(receipt_of(&s, dir.path()), None);
        let s = summary(
            vec![row(1, Some((Verdict::Rejected, Tier::Rejected)))],
            None,
        );
        assert_eq!(
            receipt_of(&s, dir.path()),
            None,
            "no receipt file was written"
        );
    }
}
