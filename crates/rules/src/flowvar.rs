//! Flow and packet variables: `pcre` captures into named variables, and the `flowvar` / `pktvar` keywords that
//! test them, as Suricata defines them.
//!
//! A `pcre` names what it captures in one of two ways (Suricata 8 accepts both, at most 8 captures per expression):
//! a named group whose name starts with the variable's scope (`(?P<flow_ua>.*)` stores group `ua` in the flow,
//! `(?P<pkt_uid>\d+)` in the packet, `(?P<alert_x>...)` in the alert), or a list after the flags that names the
//! groups in order (`pcre:"/uid=(\d+)\(([^)]+)\)/, pkt:uid, pkt:username"`: group 1 is `uid`, group 2 `username`).
//! A capture is stored only when the whole rule matches (Suricata's *post-match* variables): the verifier records
//! what each capturing expression matched on the path that succeeded ([`crate::verify`], into the worker's
//! [`Staged`] slots, one per capture, numbered at load), and the rule's match commits them
//! ([`crate::rule::Flowbit::Capture`], applied with the flowbit actions, in rule order).
//!
//! * A **flow variable** lives in the flow's matcher state until the flow ends; a later capture of the same name
//!   replaces its value. `flowvar:name,"content"` holds when the variable is set and `content` occurs in its value
//!   (Suricata searches the value for the content; the content takes `|hex|` and escapes as `content` does).
//! * A **packet variable** lives for the packet it was captured on: rules checked later on the same packet see it
//!   (`pktvar:name,"content"`, the same test), the next packet starts with none.
//! * An **alert variable** only adds a field to the alert's EVE record (`alert.context`, as Suricata 8 writes it);
//!   it never changes what matches. It lives for the one match that captured it.
//!
//! What an alert's EVE record writes of these ([`AlertVars`]) comes in two parts, as Suricata writes them. The
//! alert's own variables (`alert.context`) travel with the match ([`crate::Alert::context`], borrowed, copied only
//! for an alert that is written). The flow's flowbits, integers and variables and the packet's variables (the
//! top-level `metadata` that Suricata's EVE `metadata` option, on by default, writes) are read when the packet's
//! whole detection is done, as Suricata's loggers read them after every rule has run on the packet
//! ([`crate::RuleSet::packet_metadata`]): every alert of a packet writes the same, whatever order its rules ran in.
//!
//! Flow variables and flow integers (`flowint`) are two name spaces, as in Suricata (a flowvar `n` and a flowint
//! `n` are different variables); both live in the same per-flow state, allocated on the first one set, and end
//! with the flow.
//!
//! Bounds: a flow keeps at most [`MAX_FLOW_VARS`] variables and [`MAX_FLOW_VAR_BYTES`] bytes of values (a packet
//! the same); a value that does not fit is cut to what is left, a variable past the count is not stored, both
//! counted ([`crate::scan::ScanStats::vars_cut`]). The stores reuse their buffers: capturing and committing
//! allocate only while a store grows to its bound, never per packet in steady state (captures by a backtracking
//! expression are the exception: `fancy-regex` hands them back in a small vector of its own, one per match).

/// Where a captured variable is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VarScope {
    /// The flow (`flow_NAME`, `flow:NAME`).
    Flow,
    /// The packet (`pkt_NAME`, `pkt:NAME`).
    Packet,
    /// The alert's EVE record (`alert_NAME`, `alert:NAME`).
    Alert,
    /// The entropy an `entropy` keyword measured, kept on the flow under the name of the buffer it measured
    /// (Suricata's flow float variables: `file_data`, `content` for the payload; EVE `metadata.entropy`). Never
    /// captured by a `pcre`.
    Entropy,
}

impl VarScope {
    /// The prefix a named group or a capture list uses for the scope.
    pub fn prefix(self) -> &'static str {
        match self {
            VarScope::Flow => "flow",
            VarScope::Packet => "pkt",
            VarScope::Alert => "alert",
            VarScope::Entropy => "entropy",
        }
    }

    /// The scope's index among the four (flow, packet, alert, entropy).
    pub fn index(self) -> usize {
        match self {
            VarScope::Flow => 0,
            VarScope::Packet => 1,
            VarScope::Alert => 2,
            VarScope::Entropy => 3,
        }
    }

    fn from_prefix(p: &str) -> Option<VarScope> {
        match p {
            "flow" => Some(VarScope::Flow),
            "pkt" => Some(VarScope::Packet),
            "alert" => Some(VarScope::Alert),
            _ => None,
        }
    }
}

/// Most captures one `pcre` may name (Suricata's `DETECT_PCRE_CAPTURE_MAX`).
pub const MAX_CAPTURES: usize = 8;
/// Most variables one flow (or one packet) keeps.
pub const MAX_FLOW_VARS: usize = 16;
/// Most bytes of values one flow (or one packet) keeps, all variables together.
pub const MAX_FLOW_VAR_BYTES: usize = 4096;
/// Longest variable name (Suricata's capture names are at most 32 bytes).
pub const MAX_NAME: usize = 32;

/// One capture of a `pcre`: group `group` of the expression goes to variable `name` in `scope`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capture {
    /// The expression's capture group (1-based; 0 would be the whole match).
    pub group: usize,
    pub scope: VarScope,
    pub name: String,
    /// The capture's staging slot, numbered across the rule set at load.
    pub(crate) op: u32,
}

/// The variable a named group stores into, if its name says one: `flow_ua` → (flow, `ua`).
pub(crate) fn named_group_scope(name: &str) -> Option<(VarScope, &str)> {
    let (prefix, var) = name.split_once('_')?;
    let scope = VarScope::from_prefix(prefix)?;
    (!var.is_empty()).then_some((scope, var))
}

/// Parses the capture list after a `pcre`'s flags (`pkt:uid, flow:gid`): the n-th entry names group n.
pub(crate) fn parse_capture_list(list: &str) -> Result<Vec<(VarScope, String)>, String> {
    let mut out = Vec::new();
    for entry in list.split(',').map(str::trim) {
        if entry.is_empty() {
            continue;
        }
        let (prefix, name) = entry
            .split_once(':')
            .ok_or_else(|| format!("pcre: capture `{}` is not SCOPE:NAME", short(entry)))?;
        let scope = VarScope::from_prefix(prefix.trim()).ok_or_else(|| {
            format!(
                "pcre: capture scope `{}` (pkt, flow or alert)",
                short(prefix)
            )
        })?;
        let name = name.trim();
        check_name(name)?;
        out.push((scope, name.to_string()));
    }
    Ok(out)
}

/// A variable name as Suricata accepts it: letters, digits, `_`, `-` and `.`, at most [`MAX_NAME`] bytes.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(format!("invalid variable name `{}`", short(name)))
    }
}

fn short(s: &str) -> String {
    s.chars().take(32).collect()
}

/// What the verifier recorded for each capture on the path that matched, by staging slot: the worker's, reused.
#[derive(Debug, Default)]
pub(crate) struct Staged {
    /// (recorded since last taken, value).
    slots: Vec<(bool, Vec<u8>)>,
}

impl Staged {
    /// Records `value` for slot `op` (cut to [`MAX_FLOW_VAR_BYTES`]).
    pub fn record(&mut self, op: u32, value: &[u8]) {
        let i = op as usize;
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, Default::default);
        }
        if let Some((set, v)) = self.slots.get_mut(i) {
            v.clear();
            v.extend_from_slice(value.get(..MAX_FLOW_VAR_BYTES).unwrap_or(value));
            *set = true;
        }
    }

    /// The value recorded for slot `op` since it was last taken, marking it taken.
    pub fn take(&mut self, op: u32) -> Option<&[u8]> {
        let (set, v) = self.slots.get_mut(op as usize)?;
        std::mem::replace(set, false).then_some(v.as_slice())
    }
}

/// A bounded store of variables (a flow's or a packet's): (name id, value), reusing its buffers.
#[derive(Debug, Default, Clone)]
pub(crate) struct VarStore {
    vars: Vec<(u32, Vec<u8>)>,
    /// Entries in use (those past it keep their buffers for reuse).
    used: usize,
}

/// What storing a value did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stored {
    Whole,
    /// Cut to the bytes left, or not stored (the store is full).
    Cut,
}

impl VarStore {
    /// The value of variable `id`, if set.
    pub fn get(&self, id: u32) -> Option<&[u8]> {
        self.vars
            .get(..self.used)?
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, v)| v.as_slice())
    }

    /// Sets variable `id` to `value` (replacing it), within the store's bounds.
    pub fn set(&mut self, id: u32, value: &[u8]) -> Stored {
        let live = self.vars.get(..self.used).unwrap_or(&[]);
        let pos = live.iter().position(|(i, _)| *i == id);
        let others: usize = live
            .iter()
            .enumerate()
            .filter(|&(k, _)| Some(k) != pos)
            .map(|(_, (_, v))| v.len())
            .sum();
        let room = MAX_FLOW_VAR_BYTES.saturating_sub(others);
        let take = value.len().min(room);
        let slot = match pos {
            Some(k) => k,
            None if self.used >= MAX_FLOW_VARS => return Stored::Cut,
            None => {
                if self.vars.len() <= self.used {
                    self.vars.push((id, Vec::new()));
                }
                self.used += 1;
                self.used - 1
            }
        };
        if let Some((i, v)) = self.vars.get_mut(slot) {
            *i = id;
            v.clear();
            v.extend_from_slice(value.get(..take).unwrap_or(value));
        }
        if take < value.len() {
            Stored::Cut
        } else {
            Stored::Whole
        }
    }

    /// The variables set, as (name id, value), in the order they were first set.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &[u8])> {
        self.vars
            .get(..self.used)
            .unwrap_or(&[])
            .iter()
            .map(|(i, v)| (*i, v.as_slice()))
    }

    /// No variable is set.
    pub fn is_empty(&self) -> bool {
        self.used == 0
    }

    /// Forgets every variable (the buffers stay for reuse).
    pub fn clear(&mut self) {
        self.used = 0;
    }

    /// Bytes held, for the flow's memory figure.
    pub fn memory(&self) -> usize {
        self.vars
            .iter()
            .map(|(_, v)| v.capacity() + std::mem::size_of::<(u32, Vec<u8>)>())
            .sum()
    }
}

/// The packet variables of the packet being inspected (one per worker): cleared when the next packet begins.
#[derive(Debug, Default)]
pub(crate) struct PacketVars {
    /// The packet they belong to (its input position); `None` before the first or in an end-of-flow flush.
    packet: Option<u64>,
    pub store: VarStore,
}

impl PacketVars {
    /// The inspection of packet `packet` begins (or goes on): a different packet starts with no variables. Returns
    /// whether it is a different packet.
    pub fn begin(&mut self, packet: Option<u64>) -> bool {
        let new = packet.is_none() || packet != self.packet;
        if new {
            self.store.clear();
        }
        self.packet = packet;
        new
    }
}

/// What the packet's `entropy` keywords measured so far, as (name id, bits per byte) of [`VarScope::Entropy`]: one
/// entry per name, the last measure kept (Suricata stores each measure into the flow as it is made, so the last
/// one to run is what stays). Moved into the flow's state once the packet's detection is done
/// ([`crate::RuleSet::keep_measured`]); a name id is below the load's bound of names, so it holds at most that many.
#[derive(Debug, Default)]
pub(crate) struct Measured(pub Vec<(u32, f64)>);

impl Measured {
    pub fn record(&mut self, id: u32, value: f64) {
        match self.0.iter_mut().find(|(i, _)| *i == id) {
            Some(slot) => slot.1 = value,
            None => self.0.push((id, value)),
        }
    }
}

/// Whether `needle` occurs in `hay` (the `flowvar` / `pktvar` test; an empty needle always does).
pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || memchr::memmem::find(hay, needle).is_some()
}

/// A match's captures into its alert (`alert.context`), borrowed at the match ([`crate::Alert::context`]): nothing
/// is copied until [`AlertContext::owned`], which the engine calls only for an alert it writes.
#[derive(Clone, Copy)]
pub struct AlertContext<'a> {
    pub(crate) names: &'a [String],
    pub(crate) store: &'a VarStore,
}

impl std::fmt::Debug for AlertContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.store.iter()).finish()
    }
}

impl<'a> AlertContext<'a> {
    /// The captures of `store` named by `set`, `None` when there is none.
    pub(crate) fn of(set: &'a crate::RuleSet, store: &'a VarStore) -> Option<Self> {
        (!store.is_empty()).then(|| AlertContext {
            names: set.names(VarScope::Alert),
            store,
        })
    }

    /// The captures as (name, value).
    pub fn owned(self) -> Vec<(String, Vec<u8>)> {
        named(self.names, self.store)
    }
}

/// A store's variables as (name, value), in the order their names were first met at load (not the order they were
/// set, which follows the order rules ran in).
pub(crate) fn named(names: &[String], store: &VarStore) -> Vec<(String, Vec<u8>)> {
    let mut ids: Vec<(u32, &[u8])> = store.iter().collect();
    ids.sort_unstable_by_key(|&(id, _)| id);
    ids.into_iter()
        .filter_map(|(id, v)| Some((names.get(id as usize)?.clone(), v.to_vec())))
        .collect()
}

/// What an EVE record writes of the variables (see the module docs), owned: an alert's own captures, and the flow's
/// and the packet's variables as they stand once every rule has run on the packet
/// ([`crate::RuleSet::packet_metadata`]), the same for every alert of the packet; a flow record's are the flow's
/// variables as its end left them ([`crate::RuleSet::flow_metadata`]: no packet, no captures of its own).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AlertVars {
    /// The rule's own captures into the alert (`alert.context`), as (name, value).
    pub context: Vec<(String, Vec<u8>)>,
    /// The flow's flowbits that are set, by name (in the order their names were first met at load).
    pub flowbits: Vec<String>,
    /// The flow's integers that are set, as (name, value); the flow's and the packet's variables, as (name, value).
    /// Each in the order their names were first met at load, so that what is written never depends on the order the
    /// rules ran in.
    pub flowints: Vec<(String, u32)>,
    pub flowvars: Vec<(String, Vec<u8>)>,
    pub pktvars: Vec<(String, Vec<u8>)>,
    /// The entropy the flow's `entropy` keywords last measured, by buffer name (EVE `metadata.entropy`), as
    /// (name, bits per byte), in the order the names were first met at load.
    pub entropy: Vec<(String, f64)>,
}

/// The name under which an `entropy` keyword on buffer `keyword` keeps what it measured ([`VarScope::Entropy`]),
/// as Suricata names it: the name its detection engine registered the buffer under (`file_data` for every
/// `file.data` and for `http.response_body`, which Suricata inspects as file data; `content` for the payload;
/// `base64_data`; the legacy names of the HTTP buffers, `http_client_body`, `http_raw_uri`, ...), otherwise the
/// sticky-buffer keyword itself, which is the name Suricata registers its newer buffers under (`tls.sni`). `keyword`
/// is the keyword the rule named the buffer with, a buffer several keywords share described after it in brackets
/// (`file.data (http)`).
pub fn entropy_name(keyword: &str) -> &str {
    let kw = keyword.split(" (").next().unwrap_or(keyword);
    match kw {
        "payload" => "content",
        "file.data" | "http.response_body" => "file_data",
        "http.request_body" => "http_client_body",
        "http.uri" => "http_uri",
        "http.uri.raw" => "http_raw_uri",
        "http.method" => "http_method",
        "http.host" => "http_host",
        "http.host.raw" => "http_raw_host",
        "http.user_agent" => "http_user_agent",
        "http.cookie" => "http_cookie",
        "http.header" => "http_header",
        "http.header.raw" => "http_raw_header",
        "http.stat_code" => "http_stat_code",
        "http.stat_msg" => "http_stat_msg",
        "http.request_line" => "http_request_line",
        "http.response_line" => "http_response_line",
        "dns.query" => "dns_query",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_groups_and_lists_name_their_scope() {
        assert_eq!(named_group_scope("flow_ua"), Some((VarScope::Flow, "ua")));
        assert_eq!(
            named_group_scope("pkt_http_ua"),
            Some((VarScope::Packet, "http_ua"))
        );
        assert_eq!(named_group_scope("alert_x"), Some((VarScope::Alert, "x")));
        assert_eq!(named_group_scope("host"), None);
        assert_eq!(named_group_scope("other_x"), None);
        assert_eq!(named_group_scope("flow_"), None);
        assert_eq!(
            parse_capture_list(" pkt:uid, flow:gid ,alert:x").unwrap(),
            vec![
                (VarScope::Packet, "uid".to_string()),
                (VarScope::Flow, "gid".to_string()),
                (VarScope::Alert, "x".to_string())
            ]
        );
        assert!(parse_capture_list("host:x").is_err());
        assert!(parse_capture_list("flow").is_err());
        assert!(parse_capture_list("flow:a b").is_err());
        assert!(parse_capture_list(&format!("flow:{}", "a".repeat(33))).is_err());
    }

    #[test]
    fn a_store_replaces_values_and_keeps_its_bounds() {
        let mut s = VarStore::default();
        assert_eq!(s.set(1, b"abc"), Stored::Whole);
        assert_eq!(s.set(2, b"xyz"), Stored::Whole);
        assert_eq!(s.set(1, b"de"), Stored::Whole);
        assert_eq!(s.get(1), Some(&b"de"[..]));
        assert_eq!(s.get(2), Some(&b"xyz"[..]));
        assert_eq!(s.get(3), None);
        // The byte bound: the value is cut to what is left.
        let big = vec![b'a'; MAX_FLOW_VAR_BYTES];
        assert_eq!(s.set(3, &big), Stored::Cut);
        assert_eq!(s.get(3).map(<[u8]>::len), Some(MAX_FLOW_VAR_BYTES - 5));
        // Replacing a value counts the room its old value leaves.
        assert_eq!(s.set(3, b"small"), Stored::Whole);
        // The count bound.
        for id in 10..10 + MAX_FLOW_VARS as u32 {
            s.set(id, b"v");
        }
        assert_eq!(s.get(10 + MAX_FLOW_VARS as u32 - 1), None);
        assert_eq!(s.set(99, b"v"), Stored::Cut);
        s.clear();
        assert_eq!(s.get(1), None);
        // Buffers are reused after a clear.
        assert_eq!(s.set(5, b"again"), Stored::Whole);
        assert_eq!(s.get(5), Some(&b"again"[..]));
    }

    #[test]
    fn packet_variables_last_one_packet() {
        let mut p = PacketVars::default();
        p.begin(Some(7));
        p.store.set(0, b"x");
        p.begin(Some(7));
        assert_eq!(p.store.get(0), Some(&b"x"[..]));
        p.begin(Some(8));
        assert_eq!(p.store.get(0), None);
        p.store.set(0, b"y");
        p.begin(None);
        assert_eq!(p.store.get(0), None);
    }

    #[test]
    fn staged_values_are_taken_once() {
        let mut s = Staged::default();
        assert_eq!(s.take(3), None);
        s.record(3, b"abc");
        assert_eq!(s.take(3), Some(&b"abc"[..]));
        assert_eq!(s.take(3), None);
        assert!(contains(b"Mozilla/5.0", b"zilla"));
        assert!(!contains(b"Mozilla/5.0", b"Chrome"));
        assert!(contains(b"", b""));
    }
}
