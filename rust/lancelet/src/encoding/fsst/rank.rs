//! Ranking FSST training candidates (see [`super::train`]).
//!
//! Each training round scores a few thousand candidate symbols and keeps
//! the best ones that fit the encoder's buckets; sorting all of them took
//! about a seventh of training, so only the head is sorted unless it runs
//! out.

use super::train::Candidate;

/// Candidates by gain, highest first, ties broken by the symbol (a total
/// order, so the result does not depend on the map's order). Only the
/// head is consumed (a table holds `max_symbols` symbols; a few candidates are
/// skipped for a full bucket), so only the best ones are sorted first;
/// the rest, in order, follow lazily if the head runs out.
pub(crate) fn rank(mut all: Vec<(Candidate, u64)>, max_symbols: usize) -> impl Iterator<Item = Candidate> {
    let order = |a: &(Candidate, u64), b: &(Candidate, u64)| b.1.cmp(&a.1).then(a.0.cmp(&b.0));
    let head = (4 * max_symbols).min(all.len());
    let mut tail = Vec::new();
    if head < all.len() {
        all.select_nth_unstable_by(head, order);
        tail = all.split_off(head);
    }
    all.sort_unstable_by(order);
    let mut tail = Some(tail);
    let head_items = all.into_iter().map(|(c, _)| c);
    let tail_items = std::iter::from_fn(move || tail.take()).flat_map(move |mut t| {
        t.sort_unstable_by(order);
        t.into_iter().map(|(c, _)| c)
    });
    head_items.chain(tail_items)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The partly sorted ranking yields every candidate in the order a
    /// full sort gives, with ties on gain, long and short lists.
    #[test]
    fn ranking_matches_a_full_sort() {
        let mut state = 5u64;
        for n in [0usize, 1, 10, 1019, 1020, 1021, 5000] {
            let mut all: Vec<(Candidate, u64)> = Vec::new();
            let mut seen = std::collections::HashSet::new();
            while all.len() < n {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let c = ((state >> 20) % 50_000, 1 + (state % 8) as u8);
                if seen.insert(c) {
                    all.push((c, (state >> 40) % 40));
                }
            }
            let mut want = all.clone();
            want.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let want: Vec<Candidate> = want.into_iter().map(|(c, _)| c).collect();
            assert_eq!(rank(all, 255).collect::<Vec<_>>(), want, "n {n}");
        }
    }
}
