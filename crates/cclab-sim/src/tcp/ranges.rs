//! A set of disjoint half-open segment ranges (the sender's record of what
//! the receiver has SACKed). Inserting returns only the *newly* covered
//! sub-ranges, so each segment is tagged once however often a growing SACK
//! block is repeated — the role of Linux's `recv_sack_cache`. Cost per
//! insert: O(log n + ranges merged), never O(window).

use std::collections::BTreeMap;

#[derive(Clone, Debug, Default)]
pub struct RangeSet {
    /// start → end, disjoint and non-adjacent.
    map: BTreeMap<u32, u32>,
}

impl RangeSet {
    /// Insert [s, e); push the parts that were not yet covered onto `new`.
    pub fn insert(&mut self, s: u32, e: u32, new: &mut Vec<(u32, u32)>) {
        if s >= e {
            return;
        }
        // Start from the range that reaches s, if any (the common case: a
        // growing SACK block extends the range it reported last time).
        let (start, mut cursor, existing) = match self.map.range(..=s).next_back() {
            Some((&ps, &pe)) if pe >= s => {
                if pe >= e {
                    return; // fully covered
                }
                (ps, pe, true)
            }
            _ => (s, s, false),
        };
        let mut end = e;
        // Absorb ranges that start inside [cursor, e]; gaps between them are new.
        while let Some((&ns, &ne)) = self.map.range(cursor..=e).next() {
            if ns > cursor {
                new.push((cursor, ns));
            }
            self.map.remove(&ns);
            cursor = ne.max(cursor);
            end = end.max(ne);
            if ne >= e {
                break;
            }
        }
        if cursor < e {
            new.push((cursor, e));
        }
        if existing {
            *self.map.get_mut(&start).expect("range present") = end;
        } else {
            self.map.insert(start, end);
        }
    }

    /// Drop everything below `una`.
    pub fn trim_below(&mut self, una: u32) {
        while let Some((&s, &e)) = self.map.iter().next() {
            if e <= una {
                self.map.remove(&s);
            } else {
                if s < una {
                    self.map.remove(&s);
                    self.map.insert(una, e);
                }
                break;
            }
        }
    }

    pub fn contains(&self, x: u32) -> bool {
        self.map.range(..=x).next_back().is_some_and(|(_, &e)| x < e)
    }

    /// Highest covered segment + 1 (0 if empty).
    pub fn highest(&self) -> u32 {
        self.map.iter().next_back().map_or(0, |(_, &e)| e)
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn clear(&mut self) {
        self.map.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ins(r: &mut RangeSet, s: u32, e: u32) -> Vec<(u32, u32)> {
        let mut v = vec![];
        r.insert(s, e, &mut v);
        v
    }

    #[test]
    fn growing_block_yields_only_new_part() {
        let mut r = RangeSet::default();
        assert_eq!(ins(&mut r, 10, 12), vec![(10, 12)]);
        assert_eq!(ins(&mut r, 10, 14), vec![(12, 14)]);
        assert_eq!(ins(&mut r, 10, 14), vec![]);
        assert_eq!(ins(&mut r, 9, 15), vec![(9, 10), (14, 15)]);
    }

    #[test]
    fn bridging_merges_ranges() {
        let mut r = RangeSet::default();
        ins(&mut r, 1, 3);
        ins(&mut r, 5, 7);
        ins(&mut r, 9, 10);
        assert_eq!(ins(&mut r, 2, 9), vec![(3, 5), (7, 9)]);
        assert_eq!(r.len(), 1);
        assert!(r.contains(1) && r.contains(9) && !r.contains(10));
        r.trim_below(4);
        assert!(!r.contains(3) && r.contains(4));
        assert_eq!(r.highest(), 10);
    }

    #[test]
    fn matches_a_bitmap_on_random_inserts() {
        // Property: the union and the "new" parts equal a naive bitmap's.
        let mut x: u64 = 12345;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut r = RangeSet::default();
        let mut bits = vec![false; 300];
        for _ in 0..2000 {
            let s = (next() % 290) as u32;
            let e = s + 1 + (next() % 10) as u32;
            let new = ins(&mut r, s, e);
            let mut expect = vec![];
            for i in s..e {
                if !bits[i as usize] {
                    expect.push(i);
                    bits[i as usize] = true;
                }
            }
            let got: Vec<u32> = new.iter().flat_map(|&(a, b)| a..b).collect();
            assert_eq!(got, expect);
        }
        for i in 0..300 {
            assert_eq!(r.contains(i), bits[i as usize]);
        }
    }
}
