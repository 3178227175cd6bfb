//! A command line as the words `sh` would pass its program (quotes and backslashes resolved; no
//! expansion), so two spellings of one argv compare equal: the count lane asks whether the
//! command it counts is one the timed runs execute (docs/design.md §3.12.2).

/// The words of `command`, or `None` when its quoting is unbalanced.
pub fn shell_words(command: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => w.push(c),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\' | '$' | '`') => w.push(c),
                            '\n' => {}
                            c => {
                                w.push('\\');
                                w.push(c);
                            }
                        },
                        c => w.push(c),
                    }
                }
            }
            '\\' => match chars.next()? {
                '\n' => {}
                c => word.get_or_insert_with(String::new).push(c),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Some(words)
}

/// Whether two command lines pass the same words (the same text when either cannot be split).
pub fn same_argv(a: &str, b: &str) -> bool {
    match (shell_words(a), shell_words(b)) {
        (Some(a), Some(b)) => a == b,
        _ => a.trim() == b.trim(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_and_spaces_do_not_change_the_words() {
        assert!(!same_argv(
            "./k bench --seed {seed}  --iters 6",
            "./k 'bench' --seed \"{seed}\" --iters\\ 6"
        ));
        assert!(same_argv(
            "./k bench --seed {seed}  --iters 6",
            "./k 'bench' --seed \"{seed}\" --iters 6"
        ));
        assert_eq!(
            shell_words(r#"a "b c" 'd e' f\ g"#).unwrap(),
            ["a", "b c", "d e", "f g"]
        );
        assert_eq!(shell_words("a ''").unwrap(), ["a", ""]);
    }

    #[test]
    fn an_argument_more_or_another_value_is_another_argv() {
        assert!(!same_argv("./k bench --iters 6", "./k bench --iters 1"));
        assert!(!same_argv("./k bench", "./k bench --x"));
        assert!(shell_words("a 'b").is_none());
        assert!(!same_argv("a 'b", "a b"));
    }
}
