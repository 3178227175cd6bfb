//! Real timing noise as test data (`EVO_CALIB_TABLES=real`): the A/A recordings of
//! `scripts/record-noise` (validation/noise/: a CSV per recording, one row per run, and
//! manifest.json) read back as per-pair log-ratios, and a moving-block bootstrap that draws a
//! comparison's pairs from them. A null is the recording's own pairs, each block's signs flipped
//! or not by a fair coin: the two arms ran the same command, so which one evo called the baseline
//! is arbitrary, and a pair's ratio and its inverse are equally likely; the flips make the null
//! exactly symmetric about 1, so the median, the Hodges–Lehmann estimate and the mean all have the
//! true value 0 (centring on one of them would leave the others off when the sample is skewed).
//! An effect is every pair shifted by `ln(1 + effect)`, as if the candidate's runs were that much
//! faster. Blocks of consecutive pairs keep the drift between neighbouring runs that independent
//! draws would average away.

use std::collections::BTreeMap;
use std::path::Path;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// What a run's time is taken as: the wall clock, or the user and system CPU time it used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Wall,
    Cpu,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::Wall => "wall",
            Metric::Cpu => "user+sys",
        }
    }
}

/// One run of a recording.
#[derive(Debug, Clone)]
pub struct Run {
    pub phase: String,
    pub pair: usize,
    pub baseline: bool,
    pub wall_s: f64,
    pub cpu_s: f64,
    pub voluntary_cs: u64,
    pub involuntary_cs: u64,
}

/// One recording: what the manifest says of it, and its runs.
#[derive(Debug, Clone)]
pub struct Recording {
    pub file: String,
    pub workload: String,
    pub load: String,
    pub min_effect: f64,
    pub started: String,
    pub load_before: f64,
    pub load_after: f64,
    pub runs: Vec<Run>,
}

impl Recording {
    /// `ln(baseline / candidate)` per pair: the A/A phase first, then the comparison pairs, each
    /// in the order they ran.
    pub fn pair_logs(&self, metric: Metric) -> Vec<f64> {
        let time = |r: &Run| match metric {
            Metric::Wall => r.wall_s,
            Metric::Cpu => r.cpu_s,
        };
        // Keyed by (not the A/A phase, index): the A/A pairs sort first, each phase in order.
        let mut pairs: BTreeMap<(bool, usize), [Option<f64>; 2]> = BTreeMap::new();
        for r in &self.runs {
            let arms = pairs.entry((r.phase != "aa", r.pair)).or_default();
            arms[usize::from(!r.baseline)] = Some(time(r));
        }
        (pairs.values())
            .filter_map(|[b, c]| Some((b.as_ref()? / c.as_ref()?).ln()))
            .collect()
    }

    /// The median of a per-run count over all runs.
    pub fn median_count(&self, count: impl Fn(&Run) -> u64) -> u64 {
        let mut xs: Vec<u64> = self.runs.iter().map(count).collect();
        xs.sort_unstable();
        xs.get(xs.len() / 2).copied().unwrap_or(0)
    }
}

fn field<'a>(row: &'a [&'a str], header: &[&str], name: &str) -> Result<&'a str, String> {
    let at = (header.iter().position(|h| *h == name)).ok_or(format!("no column `{name}`"))?;
    row.get(at).copied().ok_or(format!("a row has no `{name}`"))
}

fn number<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("`{what}` is not a number: {text:?}"))
}

/// Reads one recording's CSV: every row a run that exited successfully (the recorder refuses
/// others), both arms of every pair present.
fn read_runs(path: &Path) -> Result<Vec<Run>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("empty file")?.split(',').collect();
    let mut runs = Vec::new();
    for (i, line) in lines.enumerate() {
        let row: Vec<&str> = line.split(',').collect();
        let at = |e: String| format!("{} line {}: {e}", path.display(), i + 2);
        let get = |name| field(&row, &header, name).map_err(at);
        let wall_s: f64 = number(get("wall_s")?, "wall_s").map_err(at)?;
        let user_s: f64 = number(get("user_s")?, "user_s").map_err(at)?;
        let sys_s: f64 = number(get("sys_s")?, "sys_s").map_err(at)?;
        if !(wall_s > 0.0 && user_s + sys_s > 0.0) {
            return Err(at("a run of no time".into()));
        }
        runs.push(Run {
            phase: get("phase")?.to_string(),
            pair: number(get("pair")?, "pair").map_err(at)?,
            baseline: match get("arm")? {
                "baseline" => true,
                "candidate" => false,
                other => return Err(at(format!("arm `{other}`"))),
            },
            wall_s,
            cpu_s: user_s + sys_s,
            voluntary_cs: number(get("voluntary_cs")?, "voluntary_cs").map_err(at)?,
            involuntary_cs: number(get("involuntary_cs")?, "involuntary_cs").map_err(at)?,
        });
    }
    Ok(runs)
}

/// Every recording the manifest in `dir` lists, in its order.
pub fn load(dir: &Path) -> Result<Vec<Recording>, String> {
    let path = dir.join("manifest.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let manifest: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let list = manifest["recordings"]
        .as_array()
        .ok_or("manifest.json lists no recordings")?;
    let text_of = |r: &serde_json::Value, k: &str| -> Result<String, String> {
        Ok(r[k]
            .as_str()
            .ok_or(format!("a recording has no `{k}`"))?
            .to_string())
    };
    let number_of = |r: &serde_json::Value, k: &str| -> Result<f64, String> {
        r[k].as_f64()
            .ok_or(format!("a recording has no number `{k}`"))
    };
    list.iter()
        .map(|r| {
            let file = text_of(r, "file")?;
            Ok(Recording {
                runs: read_runs(&dir.join(&file))?,
                workload: text_of(r, "workload")?,
                load: text_of(r, "load")?,
                min_effect: number_of(r, "min_effect")?,
                started: text_of(r, "started")?,
                load_before: number_of(r, "load_1min_before")?,
                load_after: number_of(r, "load_1min_after")?,
                file,
            })
        })
        .collect()
}

pub fn median(xs: &[f64]) -> f64 {
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        s[n / 2]
    } else {
        0.5 * (s[n / 2 - 1] + s[n / 2])
    }
}

/// 1.4826 × the median absolute deviation: σ for normal noise, robust to a few wild pairs.
pub fn mad_sigma(xs: &[f64]) -> f64 {
    let m = median(xs);
    let dev: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
    1.4826 * median(&dev)
}

pub fn sd(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
}

/// How a null is made of a recording's pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Null {
    /// Each block negated or not by a fair coin: exactly symmetric about 0.
    Flip,
    /// The pairs as recorded, less their Hodges–Lehmann estimate (what evo's rule estimates), so
    /// the skew of the real noise is kept.
    Centre,
}

/// `n` log-ratios drawn from `logs` (an A/A recording's pairs, centred as `null` says) in blocks
/// of `block` consecutive pairs, each block starting anywhere (wrapping around the end) and, for
/// `Null::Flip`, negated or not by a fair coin; every pair then shifted by `ln_speedup`.
pub fn block_draw(
    logs: &[f64],
    n: usize,
    block: usize,
    null: Null,
    ln_speedup: f64,
    rng: &mut ChaCha8Rng,
) -> Vec<f64> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let start = rng.random_range(0..logs.len());
        let flip = null == Null::Flip && rng.random::<bool>();
        let sign = if flip { -1.0 } else { 1.0 };
        for k in 0..block.min(n - out.len()) {
            out.push(sign * logs[(start + k) % logs.len()] + ln_speedup);
        }
    }
    out
}
