//! The shared generator is bit-for-bit rand_xoshiro's Xoshiro256PlusPlus
//! seeded with seed_from_u64(mix(seed, stream)), the simulator's generator
//! before the link model moved into cclab-netmodel: records with random
//! loss or randomized algorithms did not change with the move.
use cclab_sim::rng::{mix, Rng};
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

#[test]
fn same_stream_as_rand_xoshiro() {
    for seed in [0u64, 1, 7, 12345, u64::MAX] {
        for stream in [0u64, 1, 2, 1 << 32, (1 << 32) + 99] {
            let mut ours = Rng::new(seed, stream);
            let mut theirs = Xoshiro256PlusPlus::seed_from_u64(mix(seed, stream));
            for _ in 0..100 {
                assert_eq!(ours.next_u64(), theirs.next_u64());
                assert_eq!(ours.next_u32(), theirs.next_u32());
            }
        }
    }
}
