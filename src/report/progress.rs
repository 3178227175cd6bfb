//! Progress on the terminal: one bar per stage, counting the stage's runs against its total
//! (all scenarios' pairs, not a count that restarts with each pair), with the candidate and
//! scenario being measured and an ETA from the runs so far. A stage that makes no timed runs
//! (a build, the tests) shows a spinner and its elapsed time instead of an empty `0/0` bar; a
//! finished stage leaves one line with its duration. A second line under the bar can show a
//! detail that outlives stages (a campaign's scheduler jobs in flight). When stderr is not a
//! terminal the bars are hidden and each stage is one `evo: <stage>` line; the detail is not
//! shown.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The stage being shown.
struct Stage {
    name: String,
    started: Instant,
}

/// The terminal reporter's bar and what it knows about the current stage.
pub struct Progress {
    bar: ProgressBar,
    stage: Option<Stage>,
    /// Shown after the stage name: the candidate and the scenario being measured.
    candidate: Option<String>,
    scenario: Option<String>,
    /// The bar's template without the detail line.
    template: &'static str,
    /// The second line, when there is one.
    detail: Option<String>,
}

const BAR: &str = "{spinner} {msg} [{bar:24}] {pos}/{len} runs, {elapsed}, ETA {eta}";
const SPINNER: &str = "{spinner} {msg} {elapsed}";
/// Appended to the template when there is a detail line.
const DETAIL: &str = "\n  {prefix}";

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

impl Default for Progress {
    fn default() -> Self {
        Progress::new()
    }
}

impl Progress {
    /// Draws on stderr when it is a terminal; hidden otherwise.
    pub fn new() -> Progress {
        let target = if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Progress::with_target(target)
    }

    fn with_target(target: ProgressDrawTarget) -> Progress {
        let bar = ProgressBar::with_draw_target(None, target);
        bar.set_style(style(SPINNER));
        Progress {
            bar,
            stage: None,
            candidate: None,
            scenario: None,
            template: SPINNER,
            detail: None,
        }
    }

    fn hidden(&self) -> bool {
        self.bar.is_hidden()
    }

    /// A line above the bar (or on stderr when there is no bar).
    pub fn line(&self, text: &str) {
        if self.hidden() {
            eprintln!("{text}");
        } else {
            self.bar.println(text);
        }
    }

    /// Ends the current stage (one line with its duration) and starts `name`, with no total yet;
    /// `candidate` replaces the candidate shown when given (a confirmation's stages inside a
    /// campaign keep the candidate of the stage that started it).
    pub fn stage(&mut self, name: &str, candidate: Option<String>) {
        self.end_stage();
        if candidate.is_some() {
            self.candidate = candidate;
        }
        self.scenario = None;
        self.stage = Some(Stage {
            name: name.to_string(),
            started: Instant::now(),
        });
        if self.hidden() {
            eprintln!("evo: {}", self.label());
        }
        self.bar.reset();
        self.bar.set_length(0);
        self.restyle(SPINNER);
        self.bar.set_message(self.label());
        // A build or test stage can take minutes with no event: tick so it does not look stuck.
        self.bar.enable_steady_tick(Duration::from_secs(1));
    }

    /// The current stage will make `runs` timed runs: it becomes a bar.
    pub fn expect(&mut self, runs: usize) {
        if runs == 0 {
            return;
        }
        // Timed runs are under way: redraw only when one finishes, so that evo's own drawing
        // does not take CPU time from them.
        self.bar.disable_steady_tick();
        self.restyle(BAR);
        // The position already counts the stage's runs so far (it restarts with each stage).
        self.bar.set_length(runs as u64);
    }

    /// The stage's total changes by `delta` runs (a pair plan above or below the configured
    /// count).
    pub fn adjust(&mut self, delta: isize) {
        let len = self.bar.length().unwrap_or(0) as isize;
        let len = (len + delta).max(self.bar.position() as isize).max(0) as u64;
        self.bar.set_length(len);
    }

    /// The line under the bar: `Some` shows or replaces it, `None` removes it. It stays across
    /// stages until replaced or removed.
    pub fn detail(&mut self, text: Option<String>) {
        if text == self.detail {
            return;
        }
        let had = self.detail.is_some();
        self.detail = text;
        if let Some(text) = &self.detail {
            self.bar.set_prefix(text.clone());
        }
        if had != self.detail.is_some() {
            self.restyle(self.template);
        }
    }

    fn restyle(&mut self, template: &'static str) {
        self.template = template;
        match self.detail {
            Some(_) => self.bar.set_style(style(&format!("{template}{DETAIL}"))),
            None => self.bar.set_style(style(template)),
        }
    }

    /// The stages that follow concern no candidate in particular.
    pub fn clear_candidate(&mut self) {
        self.candidate = None;
    }

    pub fn scenario(&mut self, name: &str) {
        self.scenario = Some(name.to_string());
        self.bar.set_message(self.label());
    }

    /// One timed run finished.
    pub fn run(&mut self) {
        self.bar.inc(1);
        if self.bar.position() > self.bar.length().unwrap_or(0) {
            self.bar.set_length(self.bar.position());
        }
    }

    /// Clears the bar, leaving the last stage's line; call before printing the outcome.
    pub fn finish(&mut self) {
        self.end_stage();
        self.bar.finish_and_clear();
    }

    fn label(&self) -> String {
        let mut label = self
            .stage
            .as_ref()
            .map_or_else(String::new, |s| s.name.clone());
        if let Some(c) = &self.candidate {
            if !label.contains(c.as_str()) {
                label.push_str(&format!(" ({c})"));
            }
        }
        if let Some(s) = &self.scenario {
            label.push_str(&format!(" · {s}"));
        }
        label
    }

    fn end_stage(&mut self) {
        let Some(stage) = self.stage.take() else {
            return;
        };
        if self.hidden() {
            return;
        }
        let took = stage.started.elapsed().as_secs_f64();
        let runs = match self.bar.position() {
            0 => String::new(),
            1 => ", 1 run".to_string(),
            n => format!(", {n} runs"),
        };
        self.bar
            .println(format!("  {} ({took:.1} s{runs})", stage.name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn visible() -> Progress {
        // Drawn into a buffer, but not "hidden": the bar keeps its state as on a terminal.
        Progress::with_target(ProgressDrawTarget::term_like(Box::new(Screen::default())))
    }

    #[test]
    fn a_stage_counts_all_its_runs_against_one_total() {
        let mut p = visible();
        p.stage("measure", None);
        p.expect(10);
        p.scenario("a");
        for _ in 0..4 {
            p.run();
        }
        p.scenario("b");
        for _ in 0..3 {
            p.run();
        }
        assert_eq!(p.bar.position(), 7, "no restart per scenario or pair");
        assert_eq!(p.bar.length(), Some(10));
        // The A/A runs planned two pairs more than configured.
        p.adjust(4);
        assert_eq!(p.bar.length(), Some(14));
    }

    #[test]
    fn a_new_stage_starts_from_zero_without_a_total() {
        let mut p = visible();
        p.stage("measure", None);
        p.expect(4);
        p.run();
        p.stage("sign receipt", None);
        assert_eq!(p.bar.position(), 0);
        assert_eq!(
            p.bar.length(),
            Some(0),
            "no stale total from the previous stage"
        );
        assert!(p.label().starts_with("sign receipt"));
    }

    #[test]
    fn the_label_names_the_candidate_and_the_scenario() {
        let mut p = visible();
        p.stage("screen candidate-3", Some("fused-grad-accum".into()));
        p.scenario("train-small");
        assert_eq!(
            p.label(),
            "screen candidate-3 (fused-grad-accum) · train-small"
        );
    }

    #[test]
    fn a_confirmation_inside_a_campaign_keeps_its_candidate_until_a_campaign_stage() {
        let mut p = visible();
        p.stage("confirm candidate 2", Some("memo".into()));
        p.stage("confirm: build", None);
        assert_eq!(p.label(), "confirm: build (memo)");
        p.clear_candidate();
        p.stage("summary", None);
        assert_eq!(p.label(), "summary");
    }

    /// A terminal that keeps what is drawn on it.
    #[derive(Debug, Clone, Default)]
    struct Screen(std::sync::Arc<std::sync::Mutex<String>>);

    impl Screen {
        /// What one forced redraw of `p` puts on the screen.
        fn redraw(&self, p: &Progress) -> String {
            self.0.lock().unwrap().clear();
            p.bar.force_draw();
            self.0.lock().unwrap().clone()
        }
    }

    impl indicatif::TermLike for Screen {
        fn width(&self) -> u16 {
            120
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, line: &str) -> std::io::Result<()> {
            self.0.lock().unwrap().push_str(&format!("{line}\n"));
            Ok(())
        }
        fn write_str(&self, text: &str) -> std::io::Result<()> {
            self.0.lock().unwrap().push_str(text);
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_detail_line_is_drawn_under_the_bar_across_stages_until_removed() {
        let screen = Screen::default();
        let mut p = Progress::with_target(ProgressDrawTarget::term_like(Box::new(screen.clone())));
        p.stage("confirm candidate 1", None);
        p.detail(Some("Slurm jobs: confirm 1 running".into()));
        p.stage("confirm candidate 2", None);
        let drawn = screen.redraw(&p);
        // Each line is drawn padded to the terminal's width.
        let chars: Vec<char> = drawn.chars().filter(|c| *c != '\n').collect();
        let lines: Vec<String> = chars.chunks(120).map(|l| l.iter().collect()).collect();
        let bar = (lines.iter()).position(|l| l.contains("confirm candidate 2"));
        let detail = (lines.iter()).position(|l| l.trim() == "Slurm jobs: confirm 1 running");
        assert!(
            matches!((bar, detail), (Some(b), Some(d)) if d == b + 1),
            "{drawn:?}"
        );
        p.expect(4);
        p.run();
        assert!(screen.redraw(&p).contains("Slurm jobs"), "kept by a bar");
        p.detail(None);
        let drawn = screen.redraw(&p);
        assert!(
            drawn.contains("1/4 runs") && !drawn.contains("Slurm jobs"),
            "{drawn:?}"
        );
    }

    #[test]
    fn more_runs_than_expected_stretch_the_total() {
        let mut p = visible();
        p.stage("screen", None);
        p.expect(2);
        for _ in 0..3 {
            p.run();
        }
        assert_eq!(p.bar.length(), Some(3));
    }
}
