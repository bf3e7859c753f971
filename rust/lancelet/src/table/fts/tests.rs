use super::eval::{doc_weight, idf, phrase_matches};

#[test]
fn bm25_matches_the_research_worked_example() {
    // inv1 (§1.8): N = 6, avgdl = 21/6 = 3.5; "dog" in 3 docs.
    let avgdl = 21f32 / 6f32;
    let w = idf(3, 6);
    assert_eq!(w * doc_weight(3, 3, avgdl), 1.123628f32);
    assert_eq!(w * doc_weight(1, 3, avgdl), 0.7361701f32);
    assert_eq!(w * doc_weight(1, 6, avgdl), 0.5364053f32);
}

#[test]
fn phrase_check_follows_slop_and_order() {
    // "the quick brown fox jumps over the lazy dog": fox 3, lazi 7.
    assert!(phrase_matches(&[(&[3], 0), (&[7], 1)], 3));
    assert!(!phrase_matches(&[(&[3], 0), (&[7], 1)], 2));
    // order matters: "dog lazy" never matches lazi 7, dog 8.
    assert!(!phrase_matches(&[(&[8], 0), (&[7], 1)], 5));
    assert!(phrase_matches(&[(&[1, 9], 0), (&[2], 1)], 0));
    assert!(!phrase_matches(&[(&[1], 0), (&[], 1)], 3));
}
