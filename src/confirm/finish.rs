//! The end of a confirmation: the decision from its gates (`evidence::verdict`), `result.json`,
//! then the signed receipt and what is rendered from it (`pr_body.md`, `runs.csv`,
//! `pairs.svg`), each searched for the private key before anything is written.

use std::time::Instant;

use super::{Confirmed, Run, SignedReceipt, io_err};
use crate::environment;
use crate::evidence::verdict;
use crate::pipeline::PipelineError;
use crate::receipt;

impl Run<'_> {
    pub(super) fn finish(mut self, started: Instant) -> Result<Confirmed, PipelineError> {
        self.result.environment.load_1m_after = environment::load_1m();
        let r = &self.result;
        let d = verdict::decide_by(&r.gates, &r.scenarios, r.metric, r.min_effect);
        self.result.tier = d.tier;
        self.result.verdict = d.verdict;
        self.result.reasons = d.reasons;
        self.result.timings.total_s = started.elapsed().as_secs_f64();
        let scanner = receipt::KeyScanner::new(&self.signer.key);
        receipt::check_result(&self.result, &scanner).map_err(|leak| self.key_leak(leak))?;
        let json = serde_json::to_vec_pretty(&self.result)
            .map_err(|e| PipelineError::Internal(format!("cannot serialize the result: {e}")))?;
        self.run_dir
            .write("result.json", &json)
            .map_err(io_err("cannot write result.json"))?;
        self.stage("sign receipt");
        let receipt = self.write_evidence(&scanner)?;
        Ok(Confirmed {
            result: self.result,
            run_dir: self.run_dir.path,
            receipt,
        })
    }

    /// Refuses to go on when the private key is in what would be signed or written: says so in
    /// `error.txt`, and writes nothing else.
    fn key_leak(&self, leak: receipt::KeyLeak) -> PipelineError {
        let e = PipelineError::KeyLeak(format!(
            "{leak}. No receipt, result.json or pr_body.md was written; this run's logs hold the \
             key: delete them"
        ));
        let saved = self.run_dir.write("error.txt", format!("{e}\n").as_bytes());
        e.with_logs(&self.run_dir.path, saved.err())
    }

    /// The signed receipt, then what is rendered from it: `pr_body.md` (which quotes the
    /// receipt's digest, so it comes second), `runs.csv` and `pairs.svg`. Each is searched for the
    /// private key before anything is written.
    fn write_evidence(
        &self,
        scanner: &receipt::KeyScanner,
    ) -> Result<SignedReceipt, PipelineError> {
        use crate::report::{pairs_svg, pr_body, pr_context::ReceiptRef, runs_csv};
        let signed =
            receipt::sign(&self.result, &self.signer.key).map_err(|leak| self.key_leak(leak))?;
        let reference = ReceiptRef {
            file: receipt::RECEIPT_FILE.to_string(),
            sha256: signed.sha256.clone(),
            key_id: signed.key_id.clone(),
        };
        let sealed = receipt::statement::seal_holdouts(&self.result);
        let body = pr_body::render_default(&sealed, &reference)
            .map_err(|e| PipelineError::Internal(format!("cannot render pr_body.md: {e}")))?;
        let beside = [
            ("pr_body.md", body),
            ("runs.csv", runs_csv::render(&self.result)),
            ("pairs.svg", pairs_svg::render(&self.result)),
        ];
        for (name, text) in &beside {
            (scanner.check_text(text, name)).map_err(|leak| self.key_leak(leak))?;
        }
        let path = self
            .run_dir
            .write(receipt::RECEIPT_FILE, &signed.bytes)
            .map_err(io_err("cannot write the receipt"))?;
        for (name, text) in beside {
            self.run_dir
                .write(name, text.as_bytes())
                .map_err(io_err(format!("cannot write {name}")))?;
        }
        Ok(SignedReceipt {
            path,
            sha256: signed.sha256,
            key_id: signed.key_id,
            key_source: self.signer.source.clone(),
            key_created: self.signer.created,
            verifying_key: self.signer.key.verifying_key(),
        })
    }
}
