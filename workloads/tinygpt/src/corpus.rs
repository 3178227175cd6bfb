//! The training text, generated from a seed: no downloads, and a fresh seed gives fresh text.
//!
//! A small grammar over hand-written word lists produces English-like prose with dialogue,
//! numbers and paragraphs: enough structure for a character model to learn something in a few
//! dozen steps, and enough variety that memorizing one seed's text does not help on another.

/// SplitMix64: tiny, fast and good enough for sampling text and batch offsets. Written out here so
/// that the data stream depends only on the seed, never on a crate's version.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (n > 0); the multiply-shift bias is far below anything that matters here.
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        words[self.below(words.len())]
    }

    /// An independent stream for another purpose, so adding a draw in one place does not shift
    /// every draw in another.
    pub fn fork(&mut self, salt: u64) -> Rng {
        Rng::new(self.next_u64() ^ salt.wrapping_mul(0xD6E8_FEB8_6659_FD93))
    }
}

const DETERMINERS: &[&str] = &[
    "the", "a", "one", "that", "every", "no", "some", "her", "his", "our",
];
const ADJECTIVES: &[&str] = &[
    "quiet", "red", "old", "bright", "hollow", "narrow", "patient", "silver", "broken", "small",
    "heavy", "green", "careful", "distant", "warm", "strange", "gentle", "crooked", "pale", "last",
];
const NOUNS: &[&str] = &[
    "fox", "river", "mill", "lantern", "keeper", "window", "garden", "letter", "bridge", "raven",
    "harbor", "clock", "orchard", "stone", "wagon", "sailor", "candle", "road", "tower", "field",
    "baker", "storm", "map", "well", "market", "door", "kettle", "song", "forest", "village",
];
const VERBS: &[&str] = &[
    "watches",
    "carries",
    "remembers",
    "follows",
    "finds",
    "mends",
    "crosses",
    "hides",
    "opens",
    "guards",
    "paints",
    "counts",
    "answers",
    "leaves",
    "builds",
    "hears",
    "keeps",
    "loses",
];
const INTRANSITIVE: &[&str] = &[
    "sleeps", "waits", "sings", "wanders", "listens", "laughs", "returns", "rests", "burns",
    "falls",
];
const ADVERBS: &[&str] = &[
    "slowly",
    "again",
    "quietly",
    "at dawn",
    "at night",
    "before noon",
    "without a word",
    "twice",
    "in the rain",
    "all winter",
];
const PREPOSITIONS: &[&str] = &[
    "near", "under", "beyond", "behind", "beside", "across", "above", "toward",
];
const NAMES: &[&str] = &[
    "Ada", "Bram", "Cora", "Dov", "Elin", "Fen", "Greta", "Hugo", "Iris", "Jory",
];
const SPEECH: &[&str] = &["said", "asked", "whispered", "called", "answered"];
const NUMBERS: &[&str] = &[
    "two",
    "three",
    "four",
    "seven",
    "nine",
    "twelve",
    "forty",
    "a hundred",
];

/// Every character the generator can emit: printable ASCII plus newline. Fixed rather than taken
/// from the text, so the vocabulary (and the model's shape) is the same for every seed.
pub fn alphabet() -> Vec<char> {
    let mut chars = vec!['\n'];
    chars.extend((0x20u8..0x7f).map(char::from));
    chars
}

/// Generates at least `min_chars` characters of text from `seed`.
pub fn generate(seed: u64, min_chars: usize) -> String {
    let mut rng = Rng::new(seed ^ 0x7469_6E79_6770_7400);
    let mut text = String::with_capacity(min_chars + 256);
    while text.len() < min_chars {
        paragraph(&mut rng, &mut text);
        text.push_str("\n\n");
    }
    text
}

fn paragraph(rng: &mut Rng, out: &mut String) {
    let sentences = 2 + rng.below(5);
    for i in 0..sentences {
        if i > 0 {
            out.push(' ');
        }
        if rng.chance(20) {
            dialogue(rng, out);
        } else {
            let mut s = sentence(rng);
            capitalize(&mut s);
            out.push_str(&s);
        }
    }
}

fn sentence(rng: &mut Rng) -> String {
    let mut s = String::new();
    if rng.chance(15) {
        s.push_str(&format!("in {} ", 1600 + rng.below(400)));
    }
    noun_phrase(rng, &mut s);
    s.push(' ');
    if rng.chance(60) {
        s.push_str(rng.pick(VERBS));
        s.push(' ');
        if rng.chance(20) {
            s.push_str(rng.pick(NUMBERS));
            s.push(' ');
            s.push_str(rng.pick(NOUNS));
            s.push('s');
        } else {
            noun_phrase(rng, &mut s);
        }
    } else {
        s.push_str(rng.pick(INTRANSITIVE));
    }
    if rng.chance(40) {
        s.push(' ');
        s.push_str(rng.pick(PREPOSITIONS));
        s.push(' ');
        noun_phrase(rng, &mut s);
    }
    if rng.chance(30) {
        s.push(' ');
        s.push_str(rng.pick(ADVERBS));
    }
    if rng.chance(15) {
        s.push_str(", and ");
        noun_phrase(rng, &mut s);
        s.push(' ');
        s.push_str(rng.pick(INTRANSITIVE));
    }
    s.push(if rng.chance(10) { '!' } else { '.' });
    s
}

fn noun_phrase(rng: &mut Rng, out: &mut String) {
    if rng.chance(12) {
        out.push_str(rng.pick(NAMES));
        return;
    }
    out.push_str(rng.pick(DETERMINERS));
    out.push(' ');
    if rng.chance(50) {
        out.push_str(rng.pick(ADJECTIVES));
        out.push(' ');
    }
    out.push_str(rng.pick(NOUNS));
}

fn dialogue(rng: &mut Rng, out: &mut String) {
    let mut spoken = sentence(rng);
    capitalize(&mut spoken);
    let question = rng.chance(40);
    spoken.pop();
    out.push('"');
    out.push_str(&spoken);
    out.push_str(if question { "?\" " } else { ",\" " });
    out.push_str(if question { "asked" } else { rng.pick(SPEECH) });
    out.push(' ');
    out.push_str(rng.pick(NAMES));
    out.push('.');
}

fn capitalize(s: &mut String) {
    if let Some(first) = s.get(0..1) {
        let upper = first.to_ascii_uppercase();
        s.replace_range(0..1, &upper);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_text_other_seed_other_text() {
        assert_eq!(generate(7, 5000), generate(7, 5000));
        assert_ne!(generate(7, 5000), generate(8, 5000));
    }

    #[test]
    fn text_stays_inside_the_alphabet() {
        let alphabet = alphabet();
        assert!(generate(3, 20_000).chars().all(|c| alphabet.contains(&c)));
    }
}
