//! Which way data travels within a connection.

/// Which way a payload or packet travels, relative to the connection's client (the side that opened it).
///
/// Protocol parsers, rules (`flow:to_server`), reassembly consumers and events all speak of this direction. (The
/// decoder's `KeySide` is a different thing: which endpoint of the canonical flow key sent a packet; the engine turns
/// it into a `Direction` once it knows the client.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Direction {
    ToServer,
    ToClient,
}

impl Direction {
    /// Both directions, in [`Direction::index`] order.
    pub const BOTH: [Direction; 2] = [Direction::ToServer, Direction::ToClient];

    /// 0 for [`Direction::ToServer`], 1 for [`Direction::ToClient`]: an index into per-direction arrays.
    #[inline]
    pub fn index(self) -> usize {
        match self {
            Direction::ToServer => 0,
            Direction::ToClient => 1,
        }
    }

    /// The other direction.
    #[inline]
    pub fn reverse(self) -> Direction {
        match self {
            Direction::ToServer => Direction::ToClient,
            Direction::ToClient => Direction::ToServer,
        }
    }

    /// To the server when `from_client`, else to the client.
    #[inline]
    pub fn from_client(from_client: bool) -> Direction {
        if from_client {
            Direction::ToServer
        } else {
            Direction::ToClient
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_and_reverse_agree() {
        for (i, d) in Direction::BOTH.into_iter().enumerate() {
            assert_eq!(d.index(), i);
            assert_ne!(d.index(), d.reverse().index());
            assert_eq!(d.reverse().reverse(), d);
            assert_eq!(Direction::from_client(d == Direction::ToServer), d);
        }
    }
}
