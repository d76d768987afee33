//! Bootstrap of ranks in separate processes, on one host or several: rank 0
//! makes a secret (NCCL's 128-byte unique id) and serves it over TCP on the
//! address every rank is given ([`ADDR_ENV`]); ranks `1..size` connect
//! (retrying until rank 0 listens) and read it. Each side has a time limit,
//! so a rank that never comes is an error, not a hang.
//!
//! The wire format, one exchange per connection, integers little endian:
//! the client sends `b"RTX1"`, its rank (u32) and the group size (u32);
//! rank 0 answers `b"RTX1"`, the payload length (u32) and the payload, or
//! closes the connection if the size disagrees (the client then reports it).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::thread;
use std::time::{Duration, Instant};

use super::{CommError, CommResult};

/// The environment variable with rank 0's address (`host:port`).
pub const ADDR_ENV: &str = "RTX_DIST_ADDR";
/// The environment variable with this process's rank.
pub const RANK_ENV: &str = "RTX_DIST_RANK";
/// The environment variable with the number of ranks.
pub const SIZE_ENV: &str = "RTX_DIST_SIZE";

const MAGIC: &[u8; 4] = b"RTX1";
/// The largest payload served (NCCL's id is 128 bytes).
const MAX_PAYLOAD: usize = 1 << 16;

fn unavailable(what: impl std::fmt::Display) -> CommError {
    CommError::Unavailable(format!("rendezvous: {what}"))
}

/// Rank 0's listening end.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
}

impl Server {
    /// Listens on `addr` (`host:port`; port 0 picks a free one, see
    /// [`Server::local_addr`]).
    ///
    /// # Errors
    /// [`CommError::Unavailable`] when the address cannot be bound.
    pub fn bind(addr: &str) -> CommResult<Server> {
        let listener =
            TcpListener::bind(addr).map_err(|e| unavailable(format!("bind {addr}: {e}")))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| unavailable(format!("listen on {addr}: {e}")))?;
        Ok(Server { listener })
    }

    /// The address bound.
    ///
    /// # Errors
    /// [`CommError::Unavailable`] when the socket cannot say.
    pub fn local_addr(&self) -> CommResult<SocketAddr> {
        self.listener.local_addr().map_err(unavailable)
    }

    /// Serves `payload` to ranks `1..size`, each once, waiting at most
    /// `limit` for all of them.
    ///
    /// # Errors
    /// [`CommError::Timeout`] naming the ranks that did not come;
    /// [`CommError::Failed`] for a client of another group size or a
    /// rank that came twice.
    pub fn serve(&self, payload: &[u8], size: usize, limit: Duration) -> CommResult<()> {
        assert!(
            payload.len() <= MAX_PAYLOAD,
            "payload of {} bytes",
            payload.len()
        );
        let deadline = Instant::now() + limit;
        let mut served = vec![false; size];
        served[0] = true;
        while served.iter().any(|s| !s) {
            match self.listener.accept() {
                Ok((mut stream, _)) => {
                    let (rank, their_size) = read_hello(&mut stream, deadline)?;
                    if their_size != size || rank == 0 || rank >= size || served[rank] {
                        return Err(CommError::Failed {
                            rank: 0,
                            cause: format!(
                                "rendezvous: a client says rank {rank} of {their_size}; \
                                 this group has {size} ranks{}",
                                if rank < size && served[rank] {
                                    " and served it already"
                                } else {
                                    ""
                                }
                            ),
                        });
                    }
                    let mut msg = Vec::with_capacity(8 + payload.len());
                    msg.extend_from_slice(MAGIC);
                    msg.extend_from_slice(&(payload.len() as u32).to_le_bytes());
                    msg.extend_from_slice(payload);
                    stream.write_all(&msg).map_err(|e| CommError::Failed {
                        rank: 0,
                        cause: format!("rendezvous: send to rank {rank}: {e}"),
                    })?;
                    served[rank] = true;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        let missing: Vec<usize> = (0..size).filter(|&r| !served[r]).collect();
                        return Err(CommError::Timeout {
                            rank: 0,
                            op: "rendezvous".into(),
                            limit,
                            missing,
                        });
                    }
                    thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(unavailable(format!("accept: {e}"))),
            }
        }
        Ok(())
    }
}

fn read_hello(stream: &mut TcpStream, deadline: Instant) -> CommResult<(usize, usize)> {
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(10));
    let io = |e: std::io::Error| unavailable(format!("read a client's hello: {e}"));
    stream.set_nonblocking(false).map_err(io)?;
    stream.set_read_timeout(Some(left)).map_err(io)?;
    let mut hello = [0u8; 12];
    stream.read_exact(&mut hello).map_err(io)?;
    if &hello[..4] != MAGIC {
        return Err(unavailable(
            "a client that does not speak the rendezvous protocol",
        ));
    }
    let word = |i: usize| u32::from_le_bytes(hello[i..i + 4].try_into().expect("4 bytes")) as usize;
    Ok((word(4), word(8)))
}

/// Fetches rank 0's payload as rank `rank` of `size`, retrying the
/// connection until rank 0 listens or `limit` has passed.
///
/// # Errors
/// [`CommError::Timeout`] when rank 0 did not answer in time;
/// [`CommError::Failed`] for a malformed answer or a refusal.
pub fn fetch(addr: &str, rank: usize, size: usize, limit: Duration) -> CommResult<Vec<u8>> {
    let deadline = Instant::now() + limit;
    let failed = |cause: String| CommError::Failed {
        rank,
        cause: format!("rendezvous with {addr}: {cause}"),
    };
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Err(CommError::Timeout {
                rank,
                op: "rendezvous".into(),
                limit,
                missing: vec![0],
            });
        }
        let target = addr
            .to_socket_addrs()
            .map_err(|e| unavailable(format!("address {addr}: {e}")))?
            .next()
            .ok_or_else(|| unavailable(format!("address {addr} resolves to nothing")))?;
        match TcpStream::connect_timeout(&target, (deadline - now).min(Duration::from_secs(1))) {
            Ok(mut s) => {
                let left = deadline
                    .saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(10));
                s.set_read_timeout(Some(left))
                    .map_err(|e| failed(e.to_string()))?;
                let mut hello = Vec::with_capacity(12);
                hello.extend_from_slice(MAGIC);
                hello.extend_from_slice(&(rank as u32).to_le_bytes());
                hello.extend_from_slice(&(size as u32).to_le_bytes());
                s.write_all(&hello)
                    .map_err(|e| failed(format!("send: {e}")))?;
                let mut head = [0u8; 8];
                s.read_exact(&mut head).map_err(|e| {
                    failed(format!(
                        "no answer ({e}): is this group {size} ranks on both sides?"
                    ))
                })?;
                if &head[..4] != MAGIC {
                    return Err(failed(
                        "an answer that is not the rendezvous protocol".into(),
                    ));
                }
                let len = u32::from_le_bytes(head[4..].try_into().expect("4 bytes")) as usize;
                if len > MAX_PAYLOAD {
                    return Err(failed(format!("a payload of {len} bytes")));
                }
                let mut payload = vec![0u8; len];
                s.read_exact(&mut payload)
                    .map_err(|e| failed(format!("payload: {e}")))?;
                return Ok(payload);
            }
            Err(_) => {
                thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_fetch_what_rank_0_serves() {
        let server = Server::bind("127.0.0.1:0").unwrap();
        let addr = server.local_addr().unwrap().to_string();
        let payload: Vec<u8> = (0..128u32).map(|i| (i * 37 % 251) as u8).collect();
        let got = thread::scope(|s| {
            let hs: Vec<_> = (1..4)
                .map(|r| {
                    let addr = addr.clone();
                    s.spawn(move || fetch(&addr, r, 4, Duration::from_secs(10)))
                })
                .collect();
            server.serve(&payload, 4, Duration::from_secs(10)).unwrap();
            hs.into_iter()
                .map(|h| h.join().unwrap().unwrap())
                .collect::<Vec<_>>()
        });
        assert!(got.iter().all(|g| *g == payload));
    }

    #[test]
    fn a_rank_that_never_comes_is_a_timeout_naming_it() {
        let server = Server::bind("127.0.0.1:0").unwrap();
        let addr = server.local_addr().unwrap().to_string();
        let e = thread::scope(|s| {
            let h = s.spawn(|| fetch(&addr, 1, 3, Duration::from_secs(10)));
            let e = server
                .serve(b"id", 3, Duration::from_millis(300))
                .unwrap_err();
            assert_eq!(h.join().unwrap().unwrap(), b"id");
            e
        });
        assert!(matches!(e, CommError::Timeout { .. }), "{e}");
        assert!(e.to_string().contains("rank(s) [2] did not arrive"), "{e}");
    }

    #[test]
    fn no_server_is_a_timeout_and_a_size_mismatch_is_refused() {
        // a port nobody listens on (bound, then closed)
        let addr = Server::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .to_string();
        let t0 = Instant::now();
        let e = fetch(&addr, 1, 2, Duration::from_millis(200)).unwrap_err();
        assert!(matches!(e, CommError::Timeout { rank: 1, .. }), "{e}");
        assert!(t0.elapsed() < Duration::from_secs(5));
        let server = Server::bind("127.0.0.1:0").unwrap();
        let addr = server.local_addr().unwrap().to_string();
        thread::scope(|s| {
            let h = s.spawn(|| fetch(&addr, 1, 5, Duration::from_secs(10)));
            let e = server.serve(b"id", 2, Duration::from_secs(10)).unwrap_err();
            assert!(
                e.to_string().contains("rank 1 of 5; this group has 2"),
                "{e}"
            );
            assert!(h.join().unwrap().is_err());
        });
    }
}
