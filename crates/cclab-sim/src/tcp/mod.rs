//! TCP endpoints: the sender (loss detection, recovery, pacing, rate
//! sampling) and the receiver (cumulative ACK + SACK, delayed ACKs).

pub mod ranges;
pub mod rcvwnd;
pub mod receiver;
pub mod rtt;
pub mod sender;
#[cfg(test)]
mod sender_tests;
