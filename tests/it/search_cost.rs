//! `search.max_cost` (docs/design.md §2.9): the costs agent runs report in `EVO_COST.json` are
//! summed before each new run starts, a run that reports a malformed cost fails with the reason,
//! and what is left of the budget is in the `budget` line of the `--json` stream. The search
//! fixture of `search_rounds` (a fake runner, real scripted agents) runs them.

use evo::pipeline::event::Event;
use evo::report::events::{Body, Source, Stream};
use evo::search::BudgetLeft;
use serde_json::Value;

use crate::search_rounds::{Fixture, patch, rows, runners};
use crate::util::schema::validator;

fn budgets(events: &[Event]) -> Vec<BudgetLeft> {
    (events.iter())
        .filter_map(|e| match e {
            Event::Budget(b) => Some(b.clone()),
            _ => None,
        })
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn a_reported_cost_that_reaches_max_cost_stops_the_next_agent_run() {
    let fx = Fixture::new("costly_agent.sh 0.6", "", r#", "rounds": 3, "max_cost": 1"#);
    let mut events = Vec::new();
    let (s, run_dir) = fx.run(&runners(), &mut events);
    // 0 and then 0.6 are below 1: two runs start; 1.2 is not, so round 3 never runs.
    let rows = rows(&s);
    assert_eq!(rows.len(), 2, "{s:#}");
    for r in &rows {
        assert!(close(r["cost"].as_f64().unwrap(), 0.6), "{s:#}");
        assert!(
            !patch(&run_dir, r).contains("EVO_COST"),
            "kept out of the patch"
        );
    }
    assert!(close(s["cost_total"].as_f64().unwrap(), 1.2), "{s:#}");
    let why = s["search_ended"].as_str().unwrap();
    assert_eq!(
        why, "search.max_cost: the agent runs reported a cost of 1.2 of 1",
        "{s:#}"
    );
    let table = std::fs::read_to_string(run_dir.join("table.txt")).unwrap();
    assert!(
        table.contains("the search ended early: search.max_cost"),
        "{table}"
    );
    assert!(
        table.contains("the agent runs reported a cost of 1.2 in all."),
        "{table}"
    );
    let left: Vec<f64> = budgets(&events).iter().map(|b| b.cost.unwrap()).collect();
    assert_eq!(left.len(), 2, "{left:?}");
    assert!(close(left[0], 1.0) && close(left[1], 0.4), "{left:?}");
}

#[test]
fn the_cost_left_is_in_the_json_budget_line_and_matches_the_schema() {
    let fx = Fixture::new(
        "costly_agent.sh 0.25",
        "",
        r#", "rounds": 2, "max_cost": 5, "max_agent_runs": 9"#,
    );
    let mut events = Vec::new();
    fx.run(&runners(), &mut events);
    let schema = validator("events");
    let lines: Vec<Value> = (budgets(&events).iter())
        .map(|b| {
            let line = Stream::new(Source::Campaign).line(Body::Budget(b.clone()));
            serde_json::to_value(line).unwrap()
        })
        .collect();
    assert_eq!(lines.len(), 2, "{lines:#?}");
    for line in &lines {
        let errors: Vec<String> = schema.iter_errors(line).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}: {line:#}");
        assert_eq!(line["event"], "budget", "{line:#}");
        assert_eq!(
            line["candidates_left"],
            Value::Null,
            "no such limit: {line:#}"
        );
    }
    let cost_left: Vec<f64> = lines
        .iter()
        .map(|l| l["cost_left"].as_f64().unwrap())
        .collect();
    assert!(
        close(cost_left[0], 5.0) && close(cost_left[1], 4.75),
        "{cost_left:?}"
    );
    assert_eq!(lines[1]["agent_runs_left"], 8);
}

/// An agent the sandbox could not start (a folder it could not enter) fails with the sandbox's
/// own message in its reason, where the terminal and the summary show it; before, only the
/// agent's log said why ("the agent exited with code 1").
#[test]
fn an_agent_the_sandbox_could_not_start_says_so_with_the_sandbox_s_message() {
    let fx = Fixture::new("refused_agent.sh", "", r#", "rounds": 1"#);
    let (s, _) = fx.run(&runners(), &mut Vec::new());
    let rows = rows(&s);
    assert_eq!(rows.len(), 1, "{s:#}");
    assert_eq!(rows[0]["status"], "agent_failed", "{s:#}");
    let reason = rows[0]["reason"].as_str().unwrap();
    assert_eq!(
        reason,
        "the agent exited with code 1; the sandbox could not start it: bwrap: Can't chdir to \
         /nowhere/work/agent-1: No such file or directory"
    );
}

#[test]
fn a_malformed_cost_fails_its_run_with_the_reason_and_a_missing_one_is_warned_of() {
    let fx = Fixture::new("costly_agent.sh bad", "", r#", "rounds": 2, "max_cost": 1"#);
    let (s, run_dir) = fx.run(&runners(), &mut Vec::new());
    let failed = rows(&s);
    assert_eq!(failed.len(), 2, "{s:#}");
    for r in &failed {
        assert_eq!(r["status"], "agent_failed", "{s:#}");
        let reason = r["reason"].as_str().unwrap();
        assert!(
            reason.contains("EVO_COST.json is not") && reason.contains("-1 is negative"),
            "{reason}"
        );
        assert!(r.get("cost").is_none(), "{s:#}");
        assert!(
            !patch(&run_dir, r).contains("EVO_COST"),
            "kept out of the patch"
        );
    }
    assert!(s.get("cost_total").is_none(), "{s:#}");

    let fx = Fixture::new("costly_agent.sh none", "", r#", "max_cost": 1"#);
    let mut events = Vec::new();
    let (s, _) = fx.run(&runners(), &mut events);
    assert_ne!(rows(&s)[0]["status"], "agent_failed", "{s:#}");
    let warned = events.iter().any(|e| {
        matches!(e, Event::Warning(message)
            if message.contains("agent-1 reported no cost (EVO_COST.json)"))
    });
    assert!(warned, "{events:#?}");
}
