//! `evo confirm`: a fresh confirmation of one patch, or of a request file, and what it leaves
//! to check: the result, the signed receipt and the commands that verify it (docs/design.md
//! §2.2).

use anyhow::Context;

use crate::cli::ConfirmArgs;
use crate::exit_codes;
use crate::failure::{Doing, Failure};
use crate::live::Live;
use crate::path::shown;
use crate::report::events::{Final, Source};
use crate::report::terminal;

/// The name a confirmation's events and run id carry: the patch file's stem.
fn patch_label(patch: &std::path::Path) -> String {
    patch
        .file_stem()
        .map_or_else(|| "patch".into(), |s| s.to_string_lossy().into_owned())
}

pub(super) fn confirm_command(args: ConfirmArgs) -> Result<i32, Failure> {
    let mut live = Live::new(args.run.json, Source::Confirm);
    if !args.request {
        live.set_candidate(&patch_label(&args.patch));
    }
    live.reported(|live| confirm_with(&args, live))
}

/// The confirmation `evo confirm` was asked for: a patch under a campaign, or a request file
/// (whose folder no sandboxed run may then see), with the command line's overrides.
fn confirm_request(
    args: &ConfirmArgs,
    live: &mut Live,
) -> Result<(crate::confirm::ConfirmRequest, Option<std::path::PathBuf>), Failure> {
    use crate::confirm::ConfirmRequest;
    let mut request = if args.request {
        let request: ConfirmRequest =
            crate::confirm::read_request(&args.patch).map_err(Failure::usage)?;
        live.set_candidate(&patch_label(&request.plan.patch_file));
        request
    } else {
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let plan = crate::plan::confirm_plan(&args.patch, args.campaign.as_deref(), &cwd)
            .map_err(Failure::usage)?;
        ConfirmRequest::new(plan, None, None)
    };
    let plan = &mut request.plan;
    if let Some(affinity) = args.run.affinity {
        plan.campaign.spec.confirm.affinity = affinity;
    }
    if let Some(baseline) = &args.baseline {
        plan.campaign.spec.baseline = baseline.clone();
    }
    override_budgets(&mut plan.campaign.spec.confirm, args).map_err(Failure::usage)?;
    if let Some(dir) = &args.out_dir {
        plan.campaign.output_dir = std::path::absolute(dir)
            .with_context(|| format!("cannot resolve --out-dir {}", dir.display()))?;
    }
    if let Some(given) = &args.explanation {
        plan.explanation = Some(explanation_text(given)?);
    }
    request.sandbox = args.run.sandbox.or(request.sandbox);
    let hidden = match args.request {
        true => Some(crate::confirm::request::hidden_folder(&args.patch).map_err(Failure::usage)?),
        false => None,
    };
    Ok((request, hidden))
}

/// `--max-pairs` and `--max-minutes` over the campaign's `confirm` settings, checked as the
/// campaign file's values are.
fn override_budgets(
    set: &mut crate::spec::campaign::ConfirmSettings,
    args: &ConfirmArgs,
) -> anyhow::Result<()> {
    use crate::spec::values::{ConfirmPairs, Minutes};
    if let Some(max) = args.max_pairs {
        let max =
            ConfirmPairs::try_from(i64::from(max)).map_err(|e| Doing::new("--max-pairs", e))?;
        if max.get() < set.pairs.get() {
            anyhow::bail!(
                "--max-pairs {} is below the campaign's confirm.pairs ({}): the cap must allow at \
                 least the first look",
                max.get(),
                set.pairs.get()
            );
        }
        set.max_pairs = Some(max);
    }
    if let Some(minutes) = args.max_minutes {
        set.max_minutes =
            Some(Minutes::try_from(minutes).map_err(|e| Doing::new("--max-minutes", e))?);
    }
    Ok(())
}

/// `--explanation TEXT|@FILE`: the text, or the file's (at most 16 KiB, like an agent's).
fn explanation_text(given: &str) -> Result<String, Failure> {
    const MAX: u64 = 16 * 1024;
    let Some(file) = given.strip_prefix('@') else {
        return Ok(given.to_string());
    };
    let read = || -> std::io::Result<String> {
        let size = std::fs::metadata(file)?.len();
        if size > MAX {
            return Err(std::io::Error::other(format!(
                "{size} bytes, over the {MAX} a stated reason may have"
            )));
        }
        Ok(String::from_utf8_lossy(&std::fs::read(file)?).into_owned())
    };
    read().map_err(|e| {
        let reading = format!("--explanation: cannot read {file}");
        Failure::usage(Doing::new(reading, e))
    })
}

fn confirm_with(args: &ConfirmArgs, live: &mut Live) -> Result<Final, Failure> {
    use crate::confirm::{self, ConfirmOptions};
    let (request, hidden) = confirm_request(args, live)?;
    let request_flag = if args.request { "--request " } else { "" };
    let what = format!("evo confirm {request_flag}{}", args.patch.display());
    let plan = &request.plan;
    let hold = match &args.held_by {
        Some(held) => crate::host::Hold::External(held.clone()),
        None => crate::host::Hold::lock_repo(&plan.campaign.repo, &what).map_err(Failure::usage)?,
    };
    let opts = ConfirmOptions {
        work_dir: args.work_dir.clone(),
        hidden: hidden.into_iter().collect(),
        ..ConfirmOptions::new(
            super::local_runners(plan.campaign.spec.confirm.affinity)?,
            hold,
        )
    };
    if args.unsigned {
        let outcome = confirm::run_confirm_unsigned(&request, &opts, &mut |e| live.event(e));
        live.finish_progress();
        let done = outcome?;
        live.say(&format!(
            "unsigned result: {}\n",
            shown(&done.run_dir.join("result.json"))
        ));
        return Ok(Final {
            verdict: Some(done.result.verdict.as_str().to_string()),
            tier: Some(done.result.tier.as_str().to_string()),
            exit_code: exit_codes::ACCEPTED,
            error: None,
            run_dir: Some(shown(&done.run_dir)),
            receipt: None,
            pr_body: None,
            result: Some(shown(&done.run_dir.join("result.json"))),
        });
    }
    let outcome = confirm::run_confirm(&request, &opts, &mut |e| live.event(e));
    live.finish_progress();
    let done = outcome?;
    live.say(&terminal::render_confirm(
        &done.result,
        &done.run_dir,
        args.verbose,
    ));
    live.say(&receipt_lines(&done.receipt));
    let r = &done.receipt;
    let key = r.key_source.verify_with(&r.key_id);
    let claim = terminal::Claim {
        verdict: done.result.verdict,
        tier: done.result.tier,
        patch: done.run_dir.join(&done.result.evidence.patch.file),
    };
    live.say(&terminal::next_commands(&r.path, &key, Some(&claim)));
    let verdict = done.result.verdict.as_str();
    let beside = |name: &str| Some(shown(&done.run_dir.join(name)));
    Ok(Final {
        verdict: Some(verdict.to_string()),
        tier: Some(done.result.tier.as_str().to_string()),
        exit_code: super::fail_on(done.result.verdict.exit_code(), verdict, &args.run.fail_on),
        error: None,
        run_dir: Some(shown(&done.run_dir)),
        receipt: Some(shown(&r.path)),
        pr_body: beside("pr_body.md"),
        result: beside("result.json"),
    })
}

/// Where the receipt went and which key signed it (and, the first time, where that key is).
fn receipt_lines(r: &crate::confirm::SignedReceipt) -> String {
    let mut text = format!("receipt: {} (sha256 {})\n", shown(&r.path), r.sha256);
    text += &format!(
        "signed with key {} ({})\n",
        r.key_id,
        r.key_source.describe()
    );
    if let (true, crate::receipt::keys::KeySource::File(private)) = (r.key_created, &r.key_source) {
        text += &format!(
            "evo created this default signing key on first use: keep {} private; give {} to \
             whoever verifies receipts\n",
            shown(private),
            shown(&private.with_file_name(crate::receipt::keys::PUBLIC_KEY_FILE))
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explanation_is_the_text_given_or_the_file_after_an_at_sign() {
        assert_eq!(explanation_text("Sum once").unwrap(), "Sum once");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("why.md");
        std::fs::write(&file, "Sum once\n\nNot twice.\n").unwrap();
        let given = format!("@{}", file.display());
        assert_eq!(
            explanation_text(&given).unwrap(),
            "Sum once\n\nNot twice.\n"
        );
        std::fs::write(&file, vec![b'x'; 16 * 1024 + 1]).unwrap();
        let e = explanation_text(&given).unwrap_err();
        assert!(
            format!("{:?}", e.error).contains("over the 16384"),
            "{:?}",
            e.error
        );
        let missing = format!("@{}", dir.path().join("none").display());
        assert!(explanation_text(&missing).is_err());
    }
}
