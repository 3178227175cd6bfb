//! `confirm.max_minutes` split between training and holdouts (docs/design.md §3.6) on the fake
//! runner: training gets the budget less the holdouts' reserve, the holdouts what training left,
//! and `--recompute` refuses a result whose recorded shares or split do not follow.

use serde_json::Value;

use crate::confirm_fake::{Fixture, WORKLOAD, recompute, recompute_receipt};

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn seconds_of_pairs(scenario: &Value) -> f64 {
    (scenario["pairs"].as_array().unwrap().iter())
        .map(|p| f(&p["baseline"]["wall_s"]) + f(&p["candidate"]["wall_s"]))
        .sum()
}

#[test]
fn a_training_scenario_that_decides_early_leaves_its_time_to_the_holdout_and_recomputes() {
    // One minute for the timed pairs of one training scenario and one holdout.
    let settings =
        r#"{ "pairs": 9, "max_pairs": 400, "aa_pairs": 11, "max_minutes": 1, "quiet_wait_s": 0 }"#;
    let fx = Fixture::configured(
        WORKLOAD,
        true,
        &[("prog.sh", "echo slow", "echo fast")],
        settings,
    );
    let done = fx.confirm(Vec::new());
    let r = &done.result;
    assert_eq!(r["verdict"], "accepted", "{r:#}");
    let (training, holdout) = (&r["scenarios"][0], &r["scenarios"][1]);
    let plan = &training["training"]["plan"];
    let split = &plan["budget_split"];
    assert_eq!(
        (f(&split["total_s"]), &split["training"], &split["holdouts"]),
        (60.0, &1.into(), &1.into())
    );
    // The reserve: the holdout's 9 pairs at the training baseline warmup's pace.
    let warmups = training["warmups"].as_array().unwrap();
    let baseline_warmup = (warmups.iter())
        .find(|w| w["arm"] == "baseline")
        .map(|w| f(&w["run"]["wall_s"]))
        .unwrap();
    let reserve = 9.0 * 2.0 * baseline_warmup;
    assert!((f(&split["reserve_s"]) - reserve).abs() < 1e-9, "{split:#}");
    assert!(
        (f(&plan["budget_s"]) - (60.0 - reserve)).abs() < 1e-9,
        "{plan:#}"
    );
    // The training decided early; the holdout gets everything it did not use, more than the
    // half an even split gave it.
    let spent = seconds_of_pairs(training);
    let hplan = &holdout["holdout"]["plan"];
    assert!(
        (f(&hplan["budget_split"]["spent_s"]) - spent).abs() < 1e-9,
        "{hplan:#}"
    );
    let holdout_budget = f(&hplan["budget_s"]);
    assert!((holdout_budget - (60.0 - spent)).abs() < 1e-9, "{hplan:#}");
    assert!(holdout_budget > 30.0, "{hplan:#}");
    assert_eq!(recompute(r), Vec::<String>::new());
    let rr = recompute_receipt(&fx, &done);
    assert_eq!(rr.0, Some(0), "{}", rr.1);

    // A share, a reserve or a configured budget edited after the fact does not follow.
    let edited = |edit: &dyn Fn(&mut Value)| {
        let mut e = r.clone();
        edit(&mut e);
        recompute(&e)
    };
    let found = edited(&|e| e["scenarios"][0]["training"]["plan"]["budget_s"] = 60.0.into());
    assert!(
        found.contains(&"scenarios[0].training.plan.budget_s".to_string()),
        "{found:?}"
    );
    let found = edited(&|e| {
        e["scenarios"][0]["training"]["plan"]["budget_split"]["reserve_s"] = 0.0.into()
    });
    assert!(
        found.contains(&"scenarios[0].training.plan.budget_split.reserve_s".to_string()),
        "{found:?}"
    );
    let found = edited(&|e| e["scenarios"][1]["holdout"]["plan"]["budget_s"] = 30.0.into());
    assert!(
        found.contains(&"scenarios[1].holdout.plan.budget_s".to_string()),
        "{found:?}"
    );
    let found =
        edited(&|e| e["scenarios"][1]["holdout"]["plan"]["budget_split"]["total_s"] = 120.0.into());
    assert!(
        found.contains(&"scenarios[1].holdout.plan.budget_split".to_string()),
        "{found:?}"
    );
    let found = edited(&|e| {
        let plan = e["scenarios"][1]["holdout"]["plan"]
            .as_object_mut()
            .unwrap();
        plan.remove("budget_split");
    });
    assert!(found.contains(&"scenarios".to_string()), "{found:?}");
}

/// The run's deadline (a campaign's `max_minutes`) cuts the budget of timed pairs, once, before
/// the first pair: to the time left less what follows at the warmups' pace (the A/A pairs and
/// the holdout's warmup here), said as a warning, and the cut budget recomputes like a
/// configured one. A deadline far ahead leaves `confirm.max_minutes` as it is.
#[test]
fn the_runs_deadline_cuts_the_budget_of_timed_pairs_and_the_cut_recomputes() {
    use std::time::{Duration, Instant};
    let settings =
        r#"{ "pairs": 9, "max_pairs": 400, "aa_pairs": 11, "max_minutes": 10, "quiet_wait_s": 0 }"#;
    let fx = || {
        Fixture::configured(
            WORKLOAD,
            true,
            &[("prog.sh", "echo slow", "echo fast")],
            settings,
        )
    };
    let total_of = |r: &Value| f(&r["scenarios"][0]["training"]["plan"]["budget_split"]["total_s"]);
    let warned = |r: &Value| {
        (r["warnings"].as_array().into_iter().flatten())
            .any(|w| w.to_string().contains("the run's deadline"))
    };

    let near = fx();
    let done = near.confirm_by(Vec::new(), Some(Instant::now() + Duration::from_secs(100)));
    let r = &done.result;
    let warmups = r["scenarios"][0]["warmups"].as_array().unwrap();
    let pace = 2.0
        * (warmups.iter())
            .find(|w| w["arm"] == "baseline")
            .map(|w| f(&w["run"]["wall_s"]))
            .unwrap();
    // 11 A/A pairs and the holdout's one warmup round follow at that pace.
    let expected = 100.0 - 12.0 * pace;
    let total = total_of(r);
    // Less the real seconds the fake's trees took before the first pair (well under 10).
    assert!(
        total <= expected && total > expected - 10.0,
        "{total} vs {expected}"
    );
    assert!(warned(r), "{:#}", r["warnings"]);
    let holdout_split = &r["scenarios"][1]["holdout"]["plan"]["budget_split"];
    assert_eq!(f(&holdout_split["total_s"]), total, "{holdout_split:#}");
    assert_eq!(recompute(r), Vec::<String>::new());
    let rr = recompute_receipt(&near, &done);
    assert_eq!(rr.0, Some(0), "{}", rr.1);

    let far = fx().confirm_by(
        Vec::new(),
        Some(Instant::now() + Duration::from_secs(86_400)),
    );
    assert_eq!(total_of(&far.result), 600.0);
    assert!(!warned(&far.result), "{:#}", far.result["warnings"]);
}
