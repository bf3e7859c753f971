use super::load_token_map;

#[test]
fn token_map_rejects_garbage() {
    assert!(load_token_map(vec![]).is_err());
    assert!(load_token_map(vec![3, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3]).is_err());
    let mut b = fst::MapBuilder::memory();
    b.insert("brown", 1).unwrap();
    b.insert("quick", 0).unwrap();
    let m = load_token_map(b.into_inner().unwrap()).unwrap();
    assert_eq!(m.get("quick"), Some(0));
    assert_eq!(m.get("dog"), None);
}
