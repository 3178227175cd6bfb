//! A campaign's scheduler jobs as a reader follows them (docs/design.md §2.8, §5.12): what the
//! coordinator observed of each job (submitted, started on a node, ended), and the tally of those
//! observations per stage and per node that the terminal shows while jobs are in flight.
//!
//! Each observation's record is declared once, here: the campaign makes it, the terminal tallies
//! it and the `--json` stream writes it as its line's body (`report::events::Body`), field for
//! field. Their doc comments are the lines' descriptions in `evo schema events`.
//!
//! The tally is a pure function of the observations, in the order they came: the latest
//! observation of a job decides where it counts, so a repeated or late observation cannot count a
//! job twice.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a job does for the campaign: a candidate's checks and screening pairs, or its
/// confirmation. Journaled with each job (`Deserialize`), so a resumed run tells them apart.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum JobStage {
    Screening,
    Confirm,
}

impl JobStage {
    pub fn as_str(self) -> &'static str {
        match self {
            JobStage::Screening => "screening",
            JobStage::Confirm => "confirm",
        }
    }
}

/// How a job ended for the campaign.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobOutcome {
    /// Its result passed the coordinator's checks and was signed.
    Done,
    /// It left no result that passes, and the candidate's confirmation is submitted again.
    Requeued,
    /// It left no result that passes, and the candidate gets no further job (`max_requeues`).
    Failed,
    /// The campaign was stopped and cancelled it; a resumed run submits it again.
    Cancelled,
}

/// A fleet job for the line's candidate was submitted (docs/design.md §2.8); `reattached`:
/// by an earlier session of this run, and followed again after `--resume`. `attempt` counts
/// the candidate's jobs for this stage, from 1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct JobSubmitted {
    pub job_id: u64,
    pub stage: JobStage,
    pub attempt: u32,
    pub reattached: bool,
}

/// The job was seen running on `node` (the scheduler's name for it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct JobStarted {
    pub job_id: u64,
    pub stage: JobStage,
    pub node: String,
}

/// The scheduler put the job back in its queue by itself after it had started (a lost node,
/// preemption, `scontrol requeue`): it counts as queued until a `job_started` names the node
/// it runs on now. `restarts`: how often the scheduler has restarted it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct JobRestarted {
    pub job_id: u64,
    pub stage: JobStage,
    pub restarts: u32,
}

/// The job is over for the campaign. `state`: the scheduler's last state of it (`completed`,
/// `failed`, `cancelled`, `timeout`, `node_fail`, …, `gone` when the scheduler no longer
/// knew it); `node`: where it ran (empty if it never did); `requeues`: how many of the
/// candidate's earlier jobs ended without a result and were submitted again; `restarts`: how
/// often the scheduler itself restarted this job; `reason`: as journaled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct JobEnded {
    pub job_id: u64,
    pub stage: JobStage,
    pub node: String,
    pub state: String,
    pub attempt: u32,
    pub requeues: u32,
    pub restarts: u32,
    pub outcome: JobOutcome,
    pub reason: String,
}

/// One observation of one job by the coordinator. (A doc comment on a record's field would
/// change the published schema of its line.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobObservation {
    Submitted(JobSubmitted),
    Started(JobStarted),
    Restarted(JobRestarted),
    Ended(JobEnded),
}

/// Where one job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Queued,
    Running,
    Ended(JobOutcome),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Job {
    stage: JobStage,
    node: String,
    phase: Phase,
}

/// Jobs in each phase. A requeued job is one that ended without a result and whose candidate was
/// submitted again (its new job counts on its own).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobCounts {
    pub queued: usize,
    pub running: usize,
    pub done: usize,
    pub failed: usize,
    pub requeued: usize,
    pub cancelled: usize,
}

impl JobCounts {
    fn add(&mut self, phase: Phase) {
        let slot = match phase {
            Phase::Queued => &mut self.queued,
            Phase::Running => &mut self.running,
            Phase::Ended(JobOutcome::Done) => &mut self.done,
            Phase::Ended(JobOutcome::Failed) => &mut self.failed,
            Phase::Ended(JobOutcome::Requeued) => &mut self.requeued,
            Phase::Ended(JobOutcome::Cancelled) => &mut self.cancelled,
        };
        *slot += 1;
    }

    /// `1 queued, 2 running, 3 done`: the phases with jobs, failures only when there are some.
    fn text(&self) -> String {
        let parts = [
            (self.queued, "queued"),
            (self.running, "running"),
            (self.done, "done"),
            (self.requeued, "requeued"),
            (self.failed, "failed"),
            (self.cancelled, "cancelled"),
        ];
        let shown: Vec<String> = (parts.iter())
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("{n} {what}"))
            .collect();
        shown.join(", ")
    }
}

/// The campaign's jobs, from the observations so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobTally {
    jobs: BTreeMap<u64, Job>,
}

impl JobTally {
    /// Takes one observation into account.
    pub fn observe(&mut self, observation: &JobObservation) {
        match observation {
            JobObservation::Submitted(JobSubmitted { job_id, stage, .. }) => {
                // A job already seen further along stays there.
                self.jobs.entry(*job_id).or_insert(Job {
                    stage: *stage,
                    node: String::new(),
                    phase: Phase::Queued,
                });
            }
            JobObservation::Started(JobStarted {
                job_id,
                stage,
                node,
            }) => {
                let job = self.job(*job_id, *stage);
                if !matches!(job.phase, Phase::Ended(_)) {
                    job.phase = Phase::Running;
                    job.node.clone_from(node);
                }
            }
            JobObservation::Restarted(JobRestarted { job_id, stage, .. }) => {
                let job = self.job(*job_id, *stage);
                if !matches!(job.phase, Phase::Ended(_)) {
                    job.phase = Phase::Queued;
                    job.node.clear();
                }
            }
            JobObservation::Ended(JobEnded {
                job_id,
                stage,
                node,
                outcome,
                ..
            }) => {
                let job = self.job(*job_id, *stage);
                job.phase = Phase::Ended(*outcome);
                if !node.is_empty() {
                    job.node.clone_from(node);
                }
            }
        }
    }

    fn job(&mut self, job_id: u64, stage: JobStage) -> &mut Job {
        self.jobs.entry(job_id).or_insert(Job {
            stage,
            node: String::new(),
            phase: Phase::Queued,
        })
    }

    /// Jobs queued or running.
    pub fn in_flight(&self) -> usize {
        (self.jobs.values())
            .filter(|j| matches!(j.phase, Phase::Queued | Phase::Running))
            .count()
    }

    /// The counts of each stage with jobs.
    pub fn per_stage(&self) -> BTreeMap<JobStage, JobCounts> {
        let mut counts: BTreeMap<JobStage, JobCounts> = BTreeMap::new();
        for job in self.jobs.values() {
            counts.entry(job.stage).or_default().add(job.phase);
        }
        counts
    }

    /// The counts of each node a job ran on (queued jobs are on none).
    pub fn per_node(&self) -> BTreeMap<String, JobCounts> {
        let mut counts: BTreeMap<String, JobCounts> = BTreeMap::new();
        for job in self.jobs.values().filter(|j| !j.node.is_empty()) {
            counts.entry(job.node.clone()).or_default().add(job.phase);
        }
        counts
    }

    /// One line for the terminal while jobs are in flight:
    /// `Slurm jobs: confirm 1 queued, 1 running, 1 done · n1: 1 running · n2: 1 done`;
    /// `None` when none is.
    pub fn line(&self) -> Option<String> {
        if self.in_flight() == 0 {
            return None;
        }
        let stages = (self.per_stage().into_iter())
            .map(|(stage, counts)| format!("{} {}", stage.as_str(), counts.text()));
        let nodes = (self.per_node().into_iter()).map(|(node, counts)| {
            let counts = counts.text();
            format!("{node}: {counts}")
        });
        let parts: Vec<String> = stages.chain(nodes).collect();
        Some(format!("Slurm jobs: {}", parts.join(" · ")))
    }
}

/// The tally of a sequence of observations.
pub fn tally<'a>(observations: impl IntoIterator<Item = &'a JobObservation>) -> JobTally {
    let mut tally = JobTally::default();
    for observation in observations {
        tally.observe(observation);
    }
    tally
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIRM: JobStage = JobStage::Confirm;

    fn submitted(job_id: u64, attempt: u32) -> JobObservation {
        JobObservation::Submitted(JobSubmitted {
            job_id,
            stage: CONFIRM,
            attempt,
            reattached: false,
        })
    }

    fn started(job_id: u64, node: &str) -> JobObservation {
        JobObservation::Started(JobStarted {
            job_id,
            stage: CONFIRM,
            node: node.into(),
        })
    }

    fn ended(job_id: u64, node: &str, outcome: JobOutcome) -> JobObservation {
        JobObservation::Ended(JobEnded {
            job_id,
            stage: CONFIRM,
            node: node.into(),
            state: "completed".into(),
            attempt: 1,
            requeues: 0,
            restarts: 0,
            outcome,
            reason: String::new(),
        })
    }

    fn counts(queued: usize, running: usize, done: usize) -> JobCounts {
        JobCounts {
            queued,
            running,
            done,
            ..JobCounts::default()
        }
    }

    #[test]
    fn jobs_are_counted_per_stage_and_per_node_by_their_latest_observation() {
        let seen = [
            submitted(11, 1),
            submitted(12, 1),
            submitted(13, 1),
            started(11, "n1"),
            started(12, "n2"),
            ended(11, "n1", JobOutcome::Requeued),
            submitted(14, 2),
            started(14, "n1"),
            // Seen again on the next poll: still one running job.
            started(14, "n1"),
            ended(12, "n2", JobOutcome::Done),
        ];
        let t = tally(&seen);
        let stage = t.per_stage()[&CONFIRM];
        assert_eq!(
            stage,
            JobCounts {
                requeued: 1,
                ..counts(1, 1, 1)
            }
        );
        let nodes = t.per_node();
        assert_eq!(nodes.len(), 2, "{nodes:?}");
        assert_eq!(
            nodes["n1"],
            JobCounts {
                requeued: 1,
                ..counts(0, 1, 0)
            }
        );
        assert_eq!(nodes["n2"], counts(0, 0, 1));
        assert_eq!(t.in_flight(), 2);
        assert_eq!(
            t.line().unwrap(),
            "Slurm jobs: confirm 1 queued, 1 running, 1 done, 1 requeued · n1: 1 running, \
             1 requeued · n2: 1 done"
        );
    }

    #[test]
    fn a_job_that_ended_between_two_polls_counts_on_the_node_its_end_names() {
        // Never seen running: it started and ended between two looks.
        let t = tally(&[submitted(5, 1), ended(5, "n2", JobOutcome::Failed)]);
        assert_eq!(
            t.per_node()["n2"],
            JobCounts {
                failed: 1,
                ..JobCounts::default()
            }
        );
        assert_eq!(t.in_flight(), 0);
        assert_eq!(t.line(), None, "nothing in flight, nothing to show");
    }

    #[test]
    fn a_late_observation_does_not_bring_an_ended_job_back() {
        let t = tally(&[
            submitted(7, 1),
            ended(7, "", JobOutcome::Cancelled),
            started(7, "n1"),
            submitted(7, 1),
        ]);
        assert_eq!(
            t.per_stage()[&CONFIRM],
            JobCounts {
                cancelled: 1,
                ..JobCounts::default()
            }
        );
        assert!(t.per_node().is_empty(), "it never ran: {:?}", t.per_node());
    }

    #[test]
    fn screening_and_confirmation_jobs_are_tallied_apart_screening_first() {
        let screening = JobObservation::Submitted(JobSubmitted {
            job_id: 3,
            stage: JobStage::Screening,
            attempt: 1,
            reattached: false,
        });
        let t = tally(&[submitted(4, 1), started(4, "n1"), screening]);
        assert_eq!(t.per_stage()[&JobStage::Screening], counts(1, 0, 0));
        assert_eq!(t.per_stage()[&CONFIRM], counts(0, 1, 0));
        assert_eq!(
            t.line().unwrap(),
            "Slurm jobs: screening 1 queued · confirm 1 running · n1: 1 running"
        );
    }

    #[test]
    fn a_job_the_scheduler_restarts_is_queued_again_until_seen_on_its_next_node() {
        let restarted = JobObservation::Restarted(JobRestarted {
            job_id: 8,
            stage: CONFIRM,
            restarts: 1,
        });
        let mut t = tally(&[submitted(8, 1), started(8, "n1"), restarted.clone()]);
        assert_eq!(t.per_stage()[&CONFIRM], counts(1, 0, 0));
        assert!(t.per_node().is_empty(), "on no node: {:?}", t.per_node());
        assert_eq!(t.in_flight(), 1);
        t.observe(&started(8, "n2"));
        assert_eq!(t.per_node()["n2"], counts(0, 1, 0));
        assert!(!t.per_node().contains_key("n1"));
        // Once it ended, a late restart does not bring it back.
        t.observe(&ended(8, "n2", JobOutcome::Done));
        t.observe(&restarted);
        assert_eq!(t.per_stage()[&CONFIRM], counts(0, 0, 1));
    }

    #[test]
    fn a_reattached_job_first_seen_running_counts_once() {
        let t = tally(&[
            started(9, "n1"),
            JobObservation::Submitted(JobSubmitted {
                job_id: 9,
                stage: CONFIRM,
                attempt: 1,
                reattached: true,
            }),
        ]);
        assert_eq!(t.per_stage()[&CONFIRM], counts(0, 1, 0));
        assert_eq!(t.per_node()["n1"], counts(0, 1, 0));
    }
}
