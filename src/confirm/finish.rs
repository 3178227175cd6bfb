//! The end of a confirmation: the decision from its gates (`evidence::verdict`), `result.json`,
//! then (with a key) the signed receipt and what is rendered from it (`pr_body.md`, `runs.csv`,
//! `pairs.svg`), each searched for the private key before anything is written. A fleet
//! coordinator signs a node's checked result with [`write_evidence`] too (docs/design.md §2.8).

use std::time::Instant;

use super::{Decided, Keying, Run, SignedReceipt, io_err};
use crate::environment;
use crate::evidence::result::ConfirmResult;
use crate::evidence::verdict;
use crate::pipeline::PipelineError;
use crate::pipeline::rundir::RunDir;
use crate::receipt::{self, keys::Signer};

impl Run<'_> {
    /// Decides the verdict and writes `result.json` (after the scan for the private key of
    /// `signer`, when there is one).
    pub(super) fn finish<K: Keying>(
        mut self,
        started: Instant,
        signer: K::Held,
    ) -> Result<Decided<K::Held>, PipelineError> {
        self.evidence.environment.load_1m_after = environment::load_1m();
        self.evidence.timings.total_s = started.elapsed().as_secs_f64();
        let e = &self.evidence;
        let decision = verdict::decide_result(e, &e.scenarios);
        let result = ConfirmResult::decided(self.evidence, decision);
        if let Some(signer) = K::signer(&signer) {
            let scanner = receipt::KeyScanner::new(&signer.key);
            (receipt::check_result(&result, &scanner))
                .map_err(|leak| key_leak(&self.run_dir, leak))?;
        }
        write_result(&self.run_dir, &result)?;
        Ok(Decided {
            result,
            run_dir: self.run_dir,
            signer,
        })
    }
}

/// Writes `result` as the run's `result.json`.
pub fn write_result(run_dir: &RunDir, result: &ConfirmResult) -> Result<(), PipelineError> {
    let json = serde_json::to_vec_pretty(result)
        .map_err(|e| PipelineError::internal_while("cannot serialize the result", e))?;
    run_dir
        .write("result.json", &json)
        .map_err(io_err("cannot write result.json"))?;
    Ok(())
}

/// Refuses to go on when the private key is in what would be signed or written: says so in
/// `error.txt`, and writes nothing else.
fn key_leak(run_dir: &RunDir, leak: receipt::KeyLeak) -> PipelineError {
    let e = PipelineError::KeyLeak {
        leak,
        note: ". No receipt, result.json or pr_body.md was written; this run's logs hold the key: \
               delete them"
            .into(),
    };
    let saved = run_dir.write("error.txt", format!("{e}\n").as_bytes());
    e.with_logs(&run_dir.path, saved.err())
}

/// The signed receipt of `result` (already written as `result.json` in `run_dir`), then what is
/// rendered from it: `pr_body.md` (which quotes the receipt's digest, so it comes second),
/// `runs.csv` and `pairs.svg`. Each is searched for the private key before anything is written.
/// A fleet coordinator signs a node's checked result with it too (docs/design.md §2.8).
pub fn write_evidence(
    run_dir: &RunDir,
    result: &ConfirmResult,
    signer: &Signer,
) -> Result<SignedReceipt, PipelineError> {
    use crate::report::{pairs_svg, pr_body, pr_context::ReceiptRef, runs_csv};
    let scanner = receipt::KeyScanner::new(&signer.key);
    let seal = run_dir
        .seal_key()
        .map_err(io_err("cannot keep the holdout seal key"))?;
    let signed =
        receipt::sign_sealed(result, &signer.key, &seal).map_err(|leak| key_leak(run_dir, leak))?;
    let reference = ReceiptRef {
        file: receipt::RECEIPT_FILE.to_string(),
        sha256: signed.sha256.clone(),
        key_id: signed.key_id.clone(),
    };
    let sealed = receipt::statement::seal_holdouts(result, &seal);
    let body = pr_body::render_default(&sealed, &reference)
        .map_err(|e| PipelineError::internal_while("cannot render pr_body.md", e))?;
    let beside = [
        ("pr_body.md", body),
        ("runs.csv", runs_csv::render(&sealed)),
        ("pairs.svg", pairs_svg::render(result)),
    ];
    for (name, text) in &beside {
        (scanner.check_text(text, name)).map_err(|leak| key_leak(run_dir, leak))?;
    }
    let path = run_dir
        .write(receipt::RECEIPT_FILE, &signed.bytes)
        .map_err(io_err("cannot write the receipt"))?;
    for (name, text) in beside {
        run_dir
            .write(name, text.as_bytes())
            .map_err(io_err(format!("cannot write {name}")))?;
    }
    Ok(SignedReceipt {
        path,
        sha256: signed.sha256,
        key_id: signed.key_id,
        key_source: signer.source.clone(),
        key_created: signer.created,
        verifying_key: signer.key.verifying_key(),
    })
}
