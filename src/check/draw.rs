//! Inputs drawn per confirmation (docs/design.md §2.2.6): a scenario's `draw` names integer
//! ranges, and each confirmation's differential runs its check on `count` assignments drawn from
//! them; a sealed holdout's `inputs` are drawn the same way, once per confirmation, from the
//! holdouts' own seed. The draw is a pure function of the confirmation's recorded seed and the draw's index
//! (splitmix64), so anyone holding the result can re-derive every drawn command.

use std::collections::BTreeMap;

use crate::spec::workload::{Draw, IntRange};

/// The most drawn checks a scenario may ask for.
pub const MAX_DRAWS: usize = 20;

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// How many values `r` holds (up to 2^64, so wide enough for any range of `i64`).
fn size(r: &IntRange) -> u128 {
    ((i128::from(r.max) - i128::from(r.min)) / i128::from(r.step)) as u128 + 1
}

/// Assignment `index` (from 0) of the values of `vars` under `seed`: each variable, in name
/// order, uniform over its range.
pub fn values(vars: &BTreeMap<String, IntRange>, seed: u64, index: usize) -> BTreeMap<String, i64> {
    let mut state = seed ^ (index as u64).wrapping_mul(0xd1b5_4a32_d192_ed03);
    (vars.iter())
        .map(|(name, r)| {
            let pick = u128::from(splitmix64(&mut state)) % size(r);
            let value = i128::from(r.min) + pick as i128 * i128::from(r.step);
            (name.clone(), value as i64)
        })
        .collect()
}

/// `command` with each `{name}` of `values` filled in (`{seed}` is left for the step).
pub fn fill(command: &str, values: &BTreeMap<String, i64>) -> String {
    (values.iter()).fold(command.to_string(), |c, (name, v)| {
        c.replace(&format!("{{{name}}}"), &v.to_string())
    })
}

/// What is wrong with the ranges of `vars`, if anything: an empty or reversed range, or a step
/// below 1.
pub fn range_problem(vars: &BTreeMap<String, IntRange>) -> Option<String> {
    (vars.iter()).find_map(|(name, r)| {
        (r.step < 1 || r.min > r.max).then(|| {
            format!(
                "{name}: needs min <= max and step >= 1 (min {}, max {}, step {})",
                r.min, r.max, r.step
            )
        })
    })
}

/// The first `{placeholder}` of `command` other than `{seed}`, if any.
pub fn unfilled(command: &str) -> Option<String> {
    let filled = command.replace(super::SEED_PLACEHOLDER, "");
    let start = filled.find('{')?;
    let rest = &filled[start..];
    let end = rest.find('}').map_or(rest.len(), |e| e + 1);
    Some(rest[..end].to_string())
}

/// What is wrong with `draw`, if anything: a count out of 1..=[`MAX_DRAWS`], an empty or
/// reversed range, a step below 1, a variable the command never names, or a `{placeholder}` of
/// the command (other than `{seed}`) that no variable fills.
pub fn problem(draw: &Draw) -> Option<String> {
    if draw.count == 0 || draw.count > MAX_DRAWS {
        return Some(format!(
            "count must be 1 to {MAX_DRAWS}, not {}",
            draw.count
        ));
    }
    if let Some(why) = range_problem(&draw.vars) {
        return Some(format!("vars.{why}"));
    }
    if let Some(name) = (draw.vars.keys()).find(|n| !draw.check.contains(&format!("{{{n}}}"))) {
        return Some(format!("vars.{name}: the check never uses `{{{name}}}`"));
    }
    if let Some(p) = unfilled(&fill(&draw.check, &values(&draw.vars, 0, 0))) {
        return Some(format!(
            "check: `{p}` is neither `{{seed}}` nor a drawn variable"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draw() -> Draw {
        let vars = [
            (
                "B",
                IntRange {
                    min: 1,
                    max: 6,
                    step: 1,
                },
            ),
            (
                "C",
                IntRange {
                    min: 12,
                    max: 96,
                    step: 12,
                },
            ),
        ];
        Draw {
            check: "./k check --seed {seed} --B {B} --C {C}".into(),
            count: 3,
            vars: vars.into_iter().map(|(n, r)| (n.to_string(), r)).collect(),
        }
    }

    #[test]
    fn every_value_is_in_its_range_and_the_draw_is_the_seed_s_alone() {
        let d = draw();
        let mut seen_b = std::collections::BTreeSet::new();
        for seed in 0..200u64 {
            for i in 0..3 {
                let v = values(&d.vars, seed, i);
                assert!((1..=6).contains(&v["B"]), "{v:?}");
                assert!(v["C"] % 12 == 0 && (12..=96).contains(&v["C"]), "{v:?}");
                seen_b.insert(v["B"]);
                assert_eq!(v, values(&d.vars, seed, i), "not a function of the seed");
            }
        }
        assert_eq!(seen_b.len(), 6, "some value never drawn");
        assert_ne!(values(&d.vars, 5, 0), values(&d.vars, 5, 1));
        let filled = fill(&d.check, &values(&d.vars, 5, 0));
        assert!(
            filled.starts_with("./k check --seed {seed} --B "),
            "{filled}"
        );
        assert!(
            !filled.contains("{B}") && !filled.contains("{C}"),
            "{filled}"
        );
    }

    #[test]
    fn the_widest_ranges_draw_without_overflow() {
        let whole = IntRange {
            min: i64::MIN,
            max: i64::MAX,
            step: 1,
        };
        let coarse = IntRange {
            min: i64::MIN,
            max: i64::MAX,
            step: i64::MAX,
        };
        let vars = BTreeMap::from([("a".to_string(), whole), ("b".to_string(), coarse)]);
        for seed in 0..50u64 {
            let v = values(&vars, seed, 0);
            assert!([i64::MIN, -1, i64::MAX - 1].contains(&v["b"]), "{v:?}");
        }
    }

    #[test]
    fn a_draw_that_cannot_be_made_says_why() {
        assert_eq!(problem(&draw()), None);
        let mut d = draw();
        d.count = 0;
        assert!(problem(&d).unwrap().contains("count must be 1"));
        let mut d = draw();
        d.vars.get_mut("B").unwrap().min = 9;
        assert!(problem(&d).unwrap().contains("vars.B"));
        let mut d = draw();
        d.check = "./k check --seed {seed} --B {B} --C {C} --T {T}".into();
        assert!(problem(&d).unwrap().contains("`{T}`"));
        let mut d = draw();
        d.check = "./k check --seed {seed} --B {B}".into();
        assert!(problem(&d).unwrap().contains("never uses `{C}`"));
    }
}
