//! `evo campaign run` and `evo campaign screen-job`: a whole campaign on this machine, and one
//! candidate's checks and screening as a fleet job on its node (docs/design.md §2.3, §2.8).

use anyhow::Context;

use crate::campaign::{self, CampaignOptions};
use crate::cli::{CampaignRunArgs, ScreenJobArgs};
use crate::exit_codes;
use crate::failure::Failure;
use crate::live::Live;
use crate::path::shown;
use crate::report::events::{Final, Source};
use crate::report::terminal;

pub(super) fn campaign_command(args: CampaignRunArgs) -> Result<i32, Failure> {
    let live = Live::new(args.run.json, Source::Campaign);
    live.reported(|live| campaign_with(&args, live))
}

fn campaign_with(args: &CampaignRunArgs, live: &mut Live) -> Result<Final, Failure> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let file = if args.campaign.is_absolute() {
        args.campaign.clone()
    } else {
        cwd.join(&args.campaign)
    };
    let mut plan = crate::plan::campaign_plan(&file).map_err(Failure::usage)?;
    if let Some(affinity) = args.run.affinity {
        plan.spec.confirm.affinity = affinity;
    }
    if let Some(engine) = args.fleet {
        crate::fleet::choose_engine(&mut plan.spec, engine);
    }
    let what = format!("evo campaign run {}", args.campaign.display());
    let hold = crate::host::Hold::lock_repo(&plan.repo, &what).map_err(Failure::usage)?;
    let opts = CampaignOptions {
        resume: args.resume.clone(),
        sandbox: args.run.sandbox,
        ..CampaignOptions::new(super::local_runners(plan.spec.confirm.affinity)?, hold)
    };
    let outcome = campaign::run_campaign(&plan, &opts, &mut |e| live.event(e));
    live.finish_progress();
    let done = outcome?;
    let mut table = terminal::render_campaign(&done.summary, &done.run_dir);
    let review = done.review(&plan);
    if let Some(r) = &review {
        table.push_str(&terminal::next_commands(
            &r.receipt,
            &r.key,
            r.claim.as_ref(),
        ));
    }
    live.say(&table);
    let verdict = done.summary.verdict();
    Ok(Final {
        verdict: Some(verdict.as_str().to_string()),
        tier: done.accepted_tier().map(|t| t.as_str().to_string()),
        exit_code: super::fail_on(verdict.exit_code(), verdict.as_str(), &args.run.fail_on),
        error: None,
        run_dir: Some(shown(&done.run_dir)),
        pr_body: review
            .as_ref()
            .and_then(|r| r.pr_body.as_deref())
            .map(shown),
        receipt: review.as_ref().map(|r| shown(&r.receipt)),
        result: Some(shown(&done.run_dir.join("summary.json"))),
    })
}

pub(super) fn screen_job_command(args: ScreenJobArgs) -> Result<i32, Failure> {
    let live = Live::new(args.json, Source::Campaign);
    live.reported(|live| screen_job_with(&args, live))
}

/// One candidate's checks and screening as a fleet job on its node (docs/design.md §2.8).
fn screen_job_with(args: &ScreenJobArgs, live: &mut Live) -> Result<Final, Failure> {
    let request: campaign::ScreenRequest =
        crate::confirm::read_request(&args.request).map_err(Failure::usage)?;
    let hidden = crate::confirm::request::hidden_folder(&args.request).map_err(Failure::usage)?;
    let plan = &request.plan.campaign;
    let what = format!(
        "evo campaign screen-job --request {}",
        args.request.display()
    );
    let hold = match &args.held_by {
        Some(held) => crate::host::Hold::External(held.clone()),
        None => crate::host::Hold::lock_repo(&plan.repo, &what).map_err(Failure::usage)?,
    };
    let opts = CampaignOptions::new(super::local_runners(plan.spec.confirm.affinity)?, hold);
    let outcome = campaign::run_screening_job(&request, &opts, &[hidden], &mut |e| live.event(e));
    live.finish_progress();
    let run_dir = outcome?;
    live.say(&format!(
        "screening journal: {}\n",
        shown(&run_dir.join("journal.jsonl"))
    ));
    Ok(Final {
        exit_code: exit_codes::ACCEPTED,
        run_dir: Some(shown(&run_dir)),
        ..Final::default()
    })
}
