//! Every integration test of evo, in one test binary: each former `tests/NAME.rs` is the module
//! `NAME` here, and `util` holds the helpers they share. One binary links the crate once, where
//! one per file linked it forty times, and a new test file is one more `mod` line below
//! (`suite` checks that none is forgotten).
//!
//! The tests run on threads of this one process: none may set a variable of the process's
//! environment or its working directory (a child `Command` is given what it needs instead).

mod util;

mod accuracy_table;
mod backing_cycles;
mod bench_fake;
mod campaign_e2e;
mod campaign_fake;
mod campaign_plan;
mod check_lane;
mod check_outputs;
mod ci_e2e;
mod ci_workflow;
mod cli_bench;
mod cli_docs;
mod confirm_budget;
mod confirm_e2e;
mod confirm_fake;
mod confirm_inputs;
mod confirm_rust;
mod confirm_seam;
mod exact_evidence;
mod fleet_env;
mod fleet_fake;
mod fleet_rounds;
mod fleet_slurm;
mod hostile_bad_files;
mod hostile_boundary;
mod hostile_faults;
mod hostile_holdouts;
mod hostile_judged_timed;
mod hostile_keys;
mod hostile_patches;
mod hostile_pr_text;
mod hostile_receipts;
mod hostile_sandbox;
mod hostile_secrets;
mod init;
mod init_layouts;
mod layering;
mod machine_output;
mod noise_corpus;
mod plan_files;
mod pr_text;
mod receipt_confirm_e2e;
mod receipt_draws;
mod receipt_key_lookup;
mod receipt_synthetic;
mod runner_real;
mod search_cost;
mod search_profile;
mod search_rounds;
mod slurm_client;
mod snapshots_output;
mod spec_files;
mod stats_props;
mod suite;
mod terminal_confirm;
mod texts_consistent;
mod tree_apply;
mod tree_inspect;
mod tree_materialize;
mod tree_overlay;
mod tree_pin;
mod tree_safety;
