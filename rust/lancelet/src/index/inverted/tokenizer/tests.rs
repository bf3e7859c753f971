//! Fixed cases probed from pylance 14.0.2 (docs/research/text-and-skip-indices.md
//! §1.7, §1.9); the seeded comparison against pylance itself is
//! tests/test_fts_tokenizer.py.

use super::*;

fn params(f: impl FnOnce(&mut TokenizerParams)) -> TokenizerParams {
    let mut p = TokenizerParams::default();
    f(&mut p);
    p
}

fn texts(p: &TokenizerParams, s: &str) -> Vec<String> {
    Tokenizer::new(p).unwrap().tokens(s).into_iter().map(|t| t.text).collect()
}

fn plain() -> TokenizerParams {
    params(|p| {
        p.stem = false;
        p.remove_stop_words = false;
    })
}

#[test]
fn simple_splits_on_non_alphanumerics() {
    let p = plain();
    assert_eq!(texts(&p, "don't"), ["don", "t"]);
    assert_eq!(texts(&p, "U.S.A."), ["u", "s", "a"]);
    assert_eq!(texts(&p, "e-mail foo_bar 3.14 x1y2 hello,world"), ["e", "mail", "foo", "bar", "3", "14", "x1y2", "hello", "world"]);
}

#[test]
fn whitespace_and_raw() {
    let p = params(|p| p.base_tokenizer = "whitespace".into());
    assert_eq!(texts(&p, "Hello, World! foo-bar  baz_qux"), ["hello,", "world!", "foo-bar", "baz_qux"]);
    assert_eq!(texts(&p, "U.S.A."), ["u.s.a."]);
    let p = params(|p| p.base_tokenizer = "raw".into());
    assert_eq!(texts(&p, "Hello, World! foo-bar  baz_qux"), ["hello, world! foo-bar  baz_qux"]);
}

#[test]
fn ngrams() {
    let p = TokenizerParams::from_options(&serde_json::from_str(r#"{"base_tokenizer":"ngram"}"#).unwrap()).unwrap();
    assert!(!p.stem && !p.remove_stop_words);
    assert_eq!(texts(&p, "Hello wörld"), ["hel", "ell", "llo", "lo ", "o w", " wo", "wor", "orl", "rld"]);
    assert!(texts(&p, "ab").is_empty());
    let p = params(|p| {
        p.base_tokenizer = "ngram".into();
        p.min_ngram_length = 2;
        p.max_ngram_length = 4;
        p.prefix_only = true;
        p.stem = false;
        p.remove_stop_words = false;
    });
    assert_eq!(texts(&p, "Hello world"), ["he", "hel", "hell"]);
    let p = params(|p| {
        p.base_tokenizer = "ngram".into();
        p.min_ngram_length = 1;
        p.max_ngram_length = 2;
        p.stem = false;
        p.remove_stop_words = false;
    });
    assert_eq!(texts(&p, "hεllo"), ["h", "hε", "ε", "εl", "l", "ll", "l", "lo", "o"]);
}

#[test]
fn max_token_length_counts_bytes() {
    let p = plain();
    assert_eq!(texts(&p, &"a".repeat(39)), ["a".repeat(39)]);
    assert!(texts(&p, &"a".repeat(40)).is_empty());
    assert!(texts(&p, &"é".repeat(20)).is_empty());
    assert!(texts(&p, &format!("{}é", "x".repeat(39))).is_empty());
}

#[test]
fn stems_then_stop_words_then_folding() {
    let p = TokenizerParams::default();
    let cases = [
        ("was", vec![]),
        ("does", vec!["doe"]),
        ("having", vec![]),
        ("running ran", vec!["run", "ran"]),
        ("caresses ponies quickly jumps lazy", vec!["caress", "poni", "quick", "jump", "lazi"]),
        ("because during before above once why any only very", vec!["becaus", "dure", "befor", "abov", "onc", "whi", "ani", "onli", "veri"]),
        ("ourselves", vec!["ourselv"]),
        ("naïve résumé généralement", vec!["naiv", "resume", "generalement"]),
        ("Straße ÆON ﬁne", vec!["strasse", "aeon", "fine"]),
        ("İstanbul", vec!["i\u{307}stanbul"]),
        ("it's", vec!["s"]),
    ];
    for (text, want) in cases {
        assert_eq!(texts(&p, text), want, "{text}");
    }
}

#[test]
fn stop_word_lists() {
    let p = params(|p| p.stem = false);
    for w in ["a", "the", "ourselves", "re", "having", "because", "very"] {
        assert!(texts(&p, w).is_empty(), "{w}");
    }
    for w in ["no", "not", "s", "t", "don", "ll", "ve", "would", "could", "whose", "let"] {
        assert_eq!(texts(&p, w), [w], "{w}");
    }
    let p = params(|p| p.custom_stop_words = Some(vec!["quick".into(), "jump".into()]));
    assert_eq!(texts(&p, "the quick fox jumps"), ["the", "fox"]);
    let p = params(|p| p.language = "French".into());
    assert_eq!(texts(&p, "Les chevaux mangeaient des pommes"), ["cheval", "mang", "pomm"]);
}

#[test]
fn positions_keep_gaps() {
    let t = Tokenizer::new(&TokenizerParams::default()).unwrap();
    let got: Vec<(String, u32)> = t.tokens("the quick brown fox jumps over the lazy dog").into_iter().map(|t| (t.text, t.position)).collect();
    let want = [("quick", 1), ("brown", 2), ("fox", 3), ("jump", 4), ("lazi", 7), ("dog", 8)];
    assert_eq!(got, want.map(|(s, p)| (s.to_string(), p)));
}

#[test]
fn params_json_round_trip_is_pylance_bytes() {
    let want = concat!(
        r#"{"lance_tokenizer":"text","base_tokenizer":"simple","language":"English","with_position":false,"#,
        r#""max_token_length":40,"lower_case":true,"stem":true,"remove_stop_words":true,"#,
        r#""custom_stop_words":null,"ascii_folding":true,"min_ngram_length":3,"max_ngram_length":3,"#,
        r#""prefix_only":false,"block_size":128,"split_identifiers":false,"split_on_numerics":false,"#,
        r#""preserve_original":false,"index_operators":false}"#
    );
    assert_eq!(TokenizerParams::default().to_json(), want);
    assert_eq!(TokenizerParams::from_json(want).unwrap(), TokenizerParams::default());
    let p = params(|p| {
        p.custom_stop_words = Some(vec!["é\"x".into()]);
        p.max_token_length = None;
    });
    assert_eq!(TokenizerParams::from_json(&p.to_json()).unwrap(), p);
}

#[test]
fn bad_options_name_the_parameter() {
    let opts = |s: &str| TokenizerParams::from_options(&serde_json::from_str(s).unwrap());
    let msg = |s: &str| opts(s).unwrap_err().to_string();
    assert!(msg(r#"{"bogus_opt":1}"#).contains("'bogus_opt'"));
    assert!(msg(r#"{"base_tokenizer":"bogus"}"#).contains("base_tokenizer"));
    assert!(msg(r#"{"language":"Klingon"}"#).contains("language"));
    assert!(msg(r#"{"block_size":64}"#).contains("block_size"));
    assert!(msg(r#"{"stem":"yes"}"#).contains("'stem'"));
    assert!(msg(r#"{"language":"Greek"}"#).contains("remove_stop_words"));
    assert!(opts(r#"{"language":"Greek","remove_stop_words":false}"#).is_ok());
    assert!(opts(r#"{"memory_limit":64,"num_workers":1}"#).is_ok());
    for e in [opts(r#"{"bogus_opt":1}"#).unwrap_err(), opts(r#"{"language":"x"}"#).unwrap_err()] {
        assert!(matches!(e, Error::InvalidInput { .. }));
    }
}

#[test]
fn snowball3_dutch_as_pylance() {
    // pylance 14 stems Dutch with Snowball 3's algorithm (probed).
    let p = params(|p| {
        p.language = "Dutch".into();
        p.remove_stop_words = false;
    });
    assert_eq!(texts(&p, "huizen gelopen geweest keepme gewerkt"), ["huis", "loop", "wees", "keepme", "werk"]);
}

#[test]
fn folding_table_as_pylance() {
    let p = plain();
    assert_eq!(texts(&p, "½ ⅻ"), ["12", "xii"]);
}
