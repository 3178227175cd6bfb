//! `pairs.svg`: the per-pair speedups of each measured scenario, drawn by hand as plain SVG so any
//! browser shows it without evo: the points, the median, the CI95 band and the noise band around 1.

use std::fmt::Write;

use crate::evidence::result::{ConfirmResult, ScenarioResult};
use crate::measure::record::Order;
use crate::stats::Ci95;

const WIDTH: f64 = 720.0;
const PANEL_HEIGHT: f64 = 300.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 44.0;
const BOTTOM: f64 = 56.0;

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// What one panel draws, taken from a scenario's figures.
struct Panel<'a> {
    s: &'a ScenarioResult,
    median: f64,
    ci95: Option<Ci95>,
    /// Noise floor as a fraction, at the comparison's pair count (the bar the median must clear),
    /// for training scenarios (holdouts have no A/A pairs).
    noise: Option<f64>,
}

fn panels(r: &ConfirmResult) -> Vec<Panel<'_>> {
    r.evidence
        .scenarios
        .iter()
        .filter(|s| !s.pairs.is_empty())
        .filter_map(|s| match (&s.training, &s.holdout) {
            (Some(f), _) => Some(Panel {
                s,
                median: f.median,
                ci95: f.ci95,
                noise: Some(f.noise_floor_pct / 100.0).filter(|n| n.is_finite()),
            }),
            (None, Some(h)) => Some(Panel {
                s,
                median: h.median,
                ci95: h.ci95,
                noise: None,
            }),
            _ => None,
        })
        .collect()
}

/// A tick step of 1, 2 or 5 times a power of ten giving about five ticks over `span`.
fn tick_step(span: f64) -> f64 {
    let raw = (span / 5.0).max(1e-9);
    let magnitude = 10f64.powf(raw.log10().floor());
    let scaled = raw / magnitude;
    let nice = if scaled <= 1.0 {
        1.0
    } else if scaled <= 2.0 {
        2.0
    } else if scaled <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// The y range: every point, the median, CI, noise band and 1, with a margin.
fn y_range(p: &Panel<'_>) -> (f64, f64) {
    let mut values: Vec<f64> = p.s.pairs.iter().map(|x| x.ratio).collect();
    values.extend([1.0, p.median]);
    if let Some(ci) = p.ci95 {
        values.extend([ci.lower, ci.upper]);
    }
    if let Some(n) = p.noise {
        values.extend([1.0 / (1.0 + n), 1.0 + n]);
    }
    let finite = values.iter().copied().filter(|v| v.is_finite());
    let lo = finite.clone().fold(f64::INFINITY, f64::min);
    let hi = finite.fold(f64::NEG_INFINITY, f64::max);
    let pad = ((hi - lo) * 0.08).max(0.005);
    // Ratios are positive: the axis never needs to go below 0.
    ((lo - pad).max(0.0), hi + pad)
}

fn panel(out: &mut String, p: &Panel<'_>, top: f64) {
    let (lo, hi) = y_range(p);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = PANEL_HEIGHT - TOP - BOTTOM;
    let y0 = top + TOP;
    let y = |v: f64| y0 + plot_h * (hi - v) / (hi - lo);
    let n = p.s.pairs.len();
    let x = |i: usize| LEFT + plot_w * (i as f64 + 0.5) / n as f64;
    let right = LEFT + plot_w;
    let _ = writeln!(
        out,
        r##"<text x="{LEFT}" y="{:.1}" font-size="15" font-weight="bold">{} ({}): per-pair speedup, {n} pairs</text>"##,
        top + 24.0,
        escape(&p.s.name),
        escape(p.s.role.as_str())
    );
    let _ = writeln!(
        out,
        r##"<rect x="{LEFT}" y="{y0:.1}" width="{plot_w:.1}" height="{plot_h:.1}" fill="#fff" stroke="#999"/>"##
    );
    if let Some(nf) = p.noise {
        let (a, b) = (y(1.0 + nf), y(1.0 / (1.0 + nf)));
        let _ = writeln!(
            out,
            r##"<rect x="{LEFT}" y="{a:.1}" width="{plot_w:.1}" height="{:.1}" fill="#bbb" fill-opacity="0.35"><title>noise band: 1 ± noise floor {:.2}%</title></rect>"##,
            b - a,
            100.0 * nf
        );
    }
    if let Some(ci) = p.ci95 {
        let (a, b) = (y(ci.upper), y(ci.lower));
        let _ = writeln!(
            out,
            r##"<rect x="{LEFT}" y="{a:.1}" width="{plot_w:.1}" height="{:.1}" fill="#3b82f6" fill-opacity="0.18"><title>{}</title></rect>"##,
            b - a,
            ci.text(4)
        );
    }
    let step = tick_step(hi - lo);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    for k in first..=last {
        // From an integer multiple, so no drift and no "-0".
        let t = k as f64 * step;
        let _ = writeln!(
            out,
            r##"<line x1="{:.1}" y1="{yt:.1}" x2="{LEFT}" y2="{yt:.1}" stroke="#666"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            LEFT - 5.0,
            LEFT - 8.0,
            y(t) + 4.0,
            format_tick(if k == 0 { 0.0 } else { t }, step),
            yt = y(t),
        );
    }
    let one = y(1.0);
    let _ = writeln!(
        out,
        r##"<line x1="{LEFT}" y1="{one:.1}" x2="{right:.1}" y2="{one:.1}" stroke="#444" stroke-dasharray="4 3"/>"##
    );
    let m = y(p.median);
    let _ = writeln!(
        out,
        r##"<line x1="{LEFT}" y1="{m:.1}" x2="{right:.1}" y2="{m:.1}" stroke="#1d4ed8" stroke-width="2"/>"##
    );
    for (i, pair) in p.s.pairs.iter().enumerate() {
        let fill = match pair.order {
            Order::CandidateFirst => "#1d4ed8",
            Order::BaselineFirst => "#fff",
        };
        let _ = writeln!(
            out,
            r##"<circle cx="{:.1}" cy="{:.1}" r="4.5" fill="{fill}" stroke="#1d4ed8" stroke-width="1.5"><title>pair {}: {:.4}×</title></circle>"##,
            x(i),
            y(pair.ratio),
            pair.index + 1,
            pair.ratio
        );
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"##,
            x(i),
            y0 + plot_h + 16.0,
            pair.index + 1
        );
    }
    let _ = writeln!(
        out,
        r##"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">pair (in run order)</text>"##,
        LEFT + plot_w / 2.0,
        y0 + plot_h + 36.0
    );
    let mid = y0 + plot_h / 2.0;
    let _ = writeln!(
        out,
        r##"<text x="20" y="{mid:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 20 {mid:.1})">speedup t_baseline / t_candidate (×)</text>"##
    );
    legend(out, p, right + 12.0, y0);
}

fn format_tick(v: f64, step: f64) -> String {
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    format!("{v:.decimals$}")
}

/// How a legend entry is drawn.
enum Swatch {
    Line { colour: &'static str, dashed: bool },
    Band { colour: &'static str, opacity: f64 },
    Dot { filled: bool },
    Nothing,
}

fn swatch(kind: &Swatch, x: f64, y: f64) -> String {
    match kind {
        Swatch::Line { colour, dashed } => format!(
            r##"<line x1="{x:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{colour}" stroke-width="2"{}/>"##,
            x + 16.0,
            if *dashed {
                r##" stroke-dasharray="4 3""##
            } else {
                ""
            }
        ),
        Swatch::Band { colour, opacity } => format!(
            r##"<rect x="{x:.1}" y="{:.1}" width="16" height="10" fill="{colour}" fill-opacity="{opacity}"/>"##,
            y - 5.0
        ),
        Swatch::Dot { filled } => format!(
            r##"<circle cx="{:.1}" cy="{y:.1}" r="4.5" fill="{}" stroke="#1d4ed8" stroke-width="1.5"/>"##,
            x + 8.0,
            if *filled { "#1d4ed8" } else { "#fff" }
        ),
        Swatch::Nothing => String::new(),
    }
}

fn legend(out: &mut String, p: &Panel<'_>, x: f64, top: f64) {
    let mut entries = vec![(
        Swatch::Line {
            colour: "#1d4ed8",
            dashed: false,
        },
        format!("estimate {:.3}×", p.median),
    )];
    entries.push(match p.ci95 {
        Some(ci) => (
            Swatch::Band {
                colour: "#3b82f6",
                opacity: 0.18,
            },
            ci.text(3),
        ),
        None => (Swatch::Nothing, "no interval (<6 pairs)".to_string()),
    });
    if let Some(nf) = p.noise {
        entries.push((
            Swatch::Band {
                colour: "#bbb",
                opacity: 0.35,
            },
            format!(
                "A/A noise floor ±{:.2}% ({} A/A pairs)",
                100.0 * nf,
                p.s.aa_pairs.len()
            ),
        ));
    }
    entries.push((
        Swatch::Line {
            colour: "#444",
            dashed: true,
        },
        "1.0 = no change".to_string(),
    ));
    entries.push((
        Swatch::Dot { filled: true },
        "candidate ran first".to_string(),
    ));
    entries.push((
        Swatch::Dot { filled: false },
        "baseline ran first".to_string(),
    ));
    for (i, (kind, label)) in entries.iter().enumerate() {
        let y = top + 10.0 + 20.0 * i as f64;
        let _ = writeln!(
            out,
            r##"{}<text x="{:.1}" y="{:.1}" font-size="11">{}</text>"##,
            swatch(kind, x, y),
            x + 22.0,
            y + 4.0,
            escape(label)
        );
    }
}

/// The SVG document: one panel per measured scenario, or a note that nothing was measured.
pub fn render(r: &ConfirmResult) -> String {
    let panels = panels(r);
    let height = PANEL_HEIGHT * panels.len().max(1) as f64;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif">"##
    );
    let _ = writeln!(
        out,
        r##"<rect width="{WIDTH}" height="{height}" fill="#fafafa"/>"##
    );
    if panels.is_empty() {
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" font-size="15" text-anchor="middle">nothing was measured in run {}</text>"##,
            WIDTH / 2.0,
            height / 2.0,
            escape(&r.evidence.run_id)
        );
    }
    for (i, p) in panels.iter().enumerate() {
        panel(&mut out, p, PANEL_HEIGHT * i as f64);
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_steps_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(tick_step(1.0), 0.2);
        assert!((tick_step(0.04) - 0.01).abs() < 1e-12);
        assert_eq!(tick_step(3.0), 1.0);
        assert_eq!(format_tick(1.05, 0.01), "1.05");
        assert_eq!(format_tick(2.0, 1.0), "2");
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
