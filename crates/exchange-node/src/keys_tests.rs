//! The key store as the log drives it: the same entries give the same keys
//! and the same state hash everywhere; refusals change nothing; snapshots
//! keep every key and no secret.

use proptest::prelude::*;

use crate::core_state::CoreState;
use crate::entry::LogEntry;
use crate::keys::{KeyError, KeySpec, Scope, Scopes};
use crate::limits::MAX_KEYS_PER_ACCOUNT;
use crate::state::ServerState;

const SECOND: u64 = 1_000_000_000;

fn account(ts: u64, key: &str) -> LogEntry {
    LogEntry::CreateAccount {
        ts,
        api_key: key.into(),
        legacy_secret: None,
    }
}

fn spec(key_id: &str, scopes: &[Scope]) -> KeySpec {
    KeySpec {
        key_id: key_id.into(),
        scopes: Scopes::of(scopes),
        ..KeySpec::default()
    }
}

fn create(ts: u64, account: u64, key: KeySpec) -> LogEntry {
    LogEntry::CreateKey {
        ts,
        account,
        key,
        by: None,
    }
}

fn apply_all(entries: &[LogEntry]) -> CoreState {
    let mut core = CoreState::new();
    for (n, entry) in entries.iter().enumerate() {
        core.apply(n as u64 + 1, entry);
    }
    core
}

#[test]
fn accounts_get_one_key_of_every_scope() {
    let core = apply_all(&[account(5, "a"), account(6, "b")]);
    let keys = &core.state.credentials.by_key;
    assert_eq!(keys["a"].account, 1);
    assert_eq!(keys["b"].account, 2);
    assert_eq!(keys["a"].scopes, Scopes::all());
    assert_eq!(keys["a"].created_at, 5);
    assert_eq!(keys["a"].secret, None);
}

#[test]
fn a_key_expires_at_its_entry_time_plus_its_lifetime() {
    let key = KeySpec {
        expires_in_secs: Some(30),
        ..spec("ro", &[Scope::Read])
    };
    let core = apply_all(&[account(1, "a"), create(100 * SECOND, 1, key)]);
    let stored = &core.state.credentials.by_key["ro"];
    assert_eq!(stored.expires_at, Some(130 * SECOND));
    assert!(!stored.is_expired(130 * SECOND - 1));
    assert!(stored.is_expired(130 * SECOND));
    assert_eq!(stored.scopes.names(), ["read"]);
}

#[test]
fn refused_key_commands_change_nothing_and_say_why() {
    let mut state = ServerState::new();
    state.apply(1, &account(1, "a"));
    state.apply(2, &account(2, "b"));
    let before = state.state_hash().unwrap();
    let cases = [
        (
            create(3, 9, spec("x", &[Scope::Read])),
            KeyError::UnknownAccount,
        ),
        (
            create(3, 0, spec("x", &[Scope::Read])),
            KeyError::UnknownAccount,
        ),
        (
            create(3, 1, spec("b", &[Scope::Read])),
            KeyError::DuplicateKey,
        ),
        (create(3, 1, spec("x", &[])), KeyError::NoScopes),
        (
            create(3, 1, spec("a b", &[Scope::Read])),
            KeyError::InvalidKeyId,
        ),
        (
            create(
                3,
                1,
                KeySpec {
                    allow: vec!["10.0.0.0/33".into()],
                    ..spec("x", &[Scope::Read])
                },
            ),
            KeyError::InvalidAllow("10.0.0.0/33".into()),
        ),
        (
            LogEntry::RevokeKey {
                ts: 3,
                key_id: "b".into(),
                account: Some(1),
                by: None,
            },
            KeyError::UnknownKey,
        ),
        (
            LogEntry::RotateKey {
                ts: 3,
                key_id: "a".into(),
                account: Some(1),
                new_key_id: "b".into(),
                ed25519: None,
                by: None,
            },
            KeyError::DuplicateKey,
        ),
        (account(3, "a"), KeyError::DuplicateKey),
    ];
    let mut index = 2;
    for (entry, error) in cases {
        index += 1;
        let applied = state.apply(index, &entry);
        assert_eq!(applied.key_error, Some(error), "{entry:?}");
        assert_eq!(applied.account, None);
        // The applied index moved; nothing else did.
        assert_eq!(state.credentials.by_key.len(), 2);
        assert_eq!(state.credentials.next_account, 3);
    }
    assert_ne!(
        before,
        state.state_hash().unwrap(),
        "the applied index is hashed"
    );
}

#[test]
fn an_account_holds_a_bounded_number_of_keys() {
    let mut entries = vec![account(1, "a")];
    for n in 1..MAX_KEYS_PER_ACCOUNT {
        entries.push(create(2, 1, spec(&format!("k{n}"), &[Scope::Read])));
    }
    let mut core = apply_all(&entries);
    assert_eq!(
        core.state.credentials.keys_of(1).count(),
        MAX_KEYS_PER_ACCOUNT
    );
    let next = entries.len() as u64 + 1;
    let applied = core.apply(next, &create(3, 1, spec("one-more", &[Scope::Read])));
    assert_eq!(applied.key_error, Some(KeyError::TooManyKeys));
}

#[test]
fn revoking_and_rotating_act_on_the_owners_key_only() {
    let key = KeySpec {
        label: "bot".into(),
        allow: vec!["10.1.2.3".into(), "2001:db8::1/64".into()],
        expires_in_secs: Some(60),
        ..spec("t", &[Scope::Read, Scope::Trade])
    };
    let mut core = apply_all(&[account(1, "a"), account(1, "b"), create(10, 1, key)]);
    let stored = core.state.credentials.by_key["t"].clone();
    assert_eq!(stored.allow, ["10.1.2.3/32", "2001:db8::/64"]);
    let rotate = LogEntry::RotateKey {
        ts: 20,
        key_id: "t".into(),
        account: Some(1),
        new_key_id: "t2".into(),
        ed25519: None,
        by: None,
    };
    let applied = core.apply(4, &rotate);
    assert_eq!(
        (applied.key_error.clone(), applied.account),
        (None, Some(1))
    );
    let keys = &core.state.credentials.by_key;
    assert!(!keys.contains_key("t"));
    let rotated = &keys["t2"];
    assert_eq!(
        (rotated.created_at, rotated.expires_at),
        (20, stored.expires_at)
    );
    assert_eq!(
        (&rotated.label, rotated.scopes, &rotated.allow),
        (&stored.label, stored.scopes, &stored.allow)
    );
    // Account 2 cannot revoke account 1's key; the admin (no account) can.
    let revoke = |account| LogEntry::RevokeKey {
        ts: 30,
        key_id: "t2".into(),
        account,
        by: None,
    };
    let applied = core.apply(5, &revoke(Some(2)));
    assert_eq!(applied.key_error, Some(KeyError::UnknownKey));
    assert!(core.state.credentials.by_key.contains_key("t2"));
    let applied = core.apply(6, &revoke(None));
    assert_eq!((applied.key_error, applied.account), (None, Some(1)));
    assert!(!core.state.credentials.by_key.contains_key("t2"));
}

#[test]
fn an_ed25519_key_rotates_only_to_a_new_public_key() {
    let key = KeySpec {
        ed25519: Some("11".repeat(32)),
        ..spec("ed", &[Scope::Read])
    };
    let mut core = apply_all(&[account(1, "a"), create(2, 1, key)]);
    let rotate = |ed25519: Option<String>| LogEntry::RotateKey {
        ts: 3,
        key_id: "ed".into(),
        account: None,
        new_key_id: "ed2".into(),
        ed25519,
        by: None,
    };
    let applied = core.apply(3, &rotate(None));
    assert_eq!(applied.key_error, Some(KeyError::InvalidPublicKey));
    let applied = core.apply(4, &rotate(Some("22".repeat(32))));
    assert_eq!(applied.key_error, None);
    let rotated = &core.state.credentials.by_key["ed2"];
    assert_eq!(rotated.ed25519.as_deref(), Some("22".repeat(32).as_str()));
}

#[test]
fn snapshots_keep_every_key_the_hash_covers_them_and_hold_no_secret() {
    let key = KeySpec {
        label: "reader".into(),
        expires_in_secs: Some(5),
        allow: vec!["192.168.0.0/16".into()],
        ..spec("ro", &[Scope::Read])
    };
    let core = apply_all(&[account(1, "a"), create(2, 1, key)]);
    let bytes = core.snapshot().unwrap();
    let restored = CoreState::restore(&bytes).unwrap();
    assert_eq!(restored.state.credentials, core.state.credentials);
    assert_eq!(
        restored.state.state_hash().unwrap(),
        core.state.state_hash().unwrap()
    );
    let master = crate::master_key::MasterKey::from_bytes([3; 32]);
    for id in ["a", "ro"] {
        let secret = master.derive_secret(id);
        assert!(!contains(&bytes, secret.as_bytes()));
    }
    // A key more or less is a different state.
    let fewer = apply_all(&[account(1, "a"), account(2, "b")]);
    let one = apply_all(&[account(1, "a"), create(2, 1, spec("b", &Scope::ALL))]);
    assert_ne!(
        fewer.state.state_hash().unwrap(),
        one.state.state_hash().unwrap()
    );
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Keys as snapshots and logs held them before scopes: every scope, and
/// the secret in the clear.
#[test]
fn keys_from_before_scopes_still_load() {
    let old = br#"{"by_key":{"k1":{"account":1,"secret":"s1"}},"next_account":2}"#;
    let credentials: crate::keys::Credentials = serde_json::from_slice(old).unwrap();
    let key = &credentials.by_key["k1"];
    assert_eq!(key.scopes, Scopes::all());
    assert_eq!(key.secret.as_deref(), Some("s1"));
    let line = br#"{"cmd":"create_account","ts":1,"api_key":"k","api_secret":"s"}"#;
    assert_eq!(
        LogEntry::decode(line).unwrap(),
        LogEntry::CreateAccount {
            ts: 1,
            api_key: "k".into(),
            legacy_secret: Some("s".into()),
        }
    );
}

fn key_entry() -> impl Strategy<Value = LogEntry> {
    let id = prop::sample::select(vec!["a", "b", "c", "d", "e"]);
    let scopes = prop::sample::subsequence(Scope::ALL.to_vec(), 0..=3);
    let by = prop::option::of(id.clone());
    prop_oneof![
        id.clone().prop_map(|id| account(1, id)),
        (id.clone(), 0u64..4, scopes, prop::option::of(1u64..100)).prop_map(
            |(id, account, scopes, expiry)| {
                let key = KeySpec {
                    expires_in_secs: expiry,
                    ..spec(id, &scopes)
                };
                create(2, account, key)
            }
        ),
        (id.clone(), prop::option::of(0u64..4), by.clone()).prop_map(|(id, account, by)| {
            LogEntry::RevokeKey {
                ts: 3,
                key_id: id.into(),
                account,
                by: by.map(Into::into),
            }
        }),
        (id.clone(), id, prop::option::of(0u64..4), by).prop_map(|(from, to, account, by)| {
            LogEntry::RotateKey {
                ts: 4,
                key_id: from.into(),
                account,
                new_key_id: to.into(),
                ed25519: None,
                by: by.map(Into::into),
            }
        }),
    ]
}

proptest! {
    /// Two replicas applying the same entries (each decoded from its
    /// encoding, as a follower reads it) hold the same keys, refuse the
    /// same commands and hash alike; a snapshot restores the same state.
    #[test]
    fn replicas_agree_on_keys(entries in prop::collection::vec(key_entry(), 1..40)) {
        let mut leader = CoreState::new();
        let mut follower = CoreState::new();
        for (n, entry) in entries.iter().enumerate() {
            let index = n as u64 + 1;
            let decoded = LogEntry::decode(&entry.encode().unwrap()).unwrap();
            prop_assert_eq!(&decoded, entry);
            let a = leader.apply(index, entry);
            let b = follower.apply(index, &decoded);
            prop_assert_eq!(a, b);
        }
        prop_assert_eq!(leader.state.state_hash().unwrap(), follower.state.state_hash().unwrap());
        let restored = CoreState::restore(&leader.snapshot().unwrap()).unwrap();
        prop_assert_eq!(&restored.state.credentials, &leader.state.credentials);
        prop_assert_eq!(restored.state.state_hash().unwrap(), leader.state.state_hash().unwrap());
        for key in leader.state.credentials.by_key.values() {
            prop_assert!(leader.state.credentials.is_client_account(key.account));
            prop_assert!(!key.scopes.is_empty());
        }
    }
}

/// The map the gateway reads: derived secrets, the legacy secret as it
/// was, public keys, and keys gone once revoked.
#[test]
fn the_shared_map_follows_the_state() {
    use crate::reads::{SharedCredentials, Verifier};
    let master = crate::master_key::MasterKey::from_bytes([4; 32]);
    let ed = KeySpec {
        ed25519: Some("22".repeat(32)),
        allow: vec!["10.0.0.0/8".into()],
        ..spec("ed", &[Scope::Read])
    };
    let legacy = LogEntry::CreateAccount {
        ts: 1,
        api_key: "old".into(),
        legacy_secret: Some("plain".into()),
    };
    let mut core = apply_all(&[account(1, "a"), legacy, create(2, 1, ed)]);
    let shared = SharedCredentials::new(&core.state.credentials, master.clone());
    let a = shared.get("a").expect("a");
    assert_eq!(a.verifier, Verifier::Hmac(master.derive_secret("a")));
    assert_eq!(a.scopes, Scopes::all());
    let old = shared.get("old").expect("old");
    assert_eq!(old.verifier, Verifier::Hmac("plain".into()));
    let ed = shared.get("ed").expect("ed");
    assert_eq!(ed.verifier, Verifier::Ed25519([0x22; 32]));
    assert!(ed.allows(Some("10.9.8.7".parse().unwrap())));
    assert!(ed.allows(Some("::ffff:10.9.8.7".parse().unwrap())));
    assert!(!ed.allows(Some("11.0.0.1".parse().unwrap())));
    assert!(!ed.allows(None));
    assert!(a.allows(None));

    let revoke = LogEntry::RevokeKey {
        ts: 3,
        key_id: "ed".into(),
        account: None,
        by: None,
    };
    let mut removals = shared.removals();
    shared.refresh(&["a"], &core.state.credentials);
    assert!(!removals.has_changed().unwrap(), "nothing was removed");
    core.apply(4, &revoke);
    shared.refresh(&revoke.key_ids(), &core.state.credentials);
    assert!(removals.has_changed().unwrap(), "a removal is signalled");
    removals.mark_unchanged();
    assert!(shared.get("ed").is_none());
    assert!(shared.get("a").is_some());
    // Secrets never show in a debug print.
    assert!(!format!("{a:?}").contains(&master.derive_secret("a")));
}

/// An allow-list entry stored IPv4-mapped (before entries were normalised
/// at creation) matches the IPv4 peers it maps.
#[test]
fn mapped_entries_stored_earlier_match_ipv4_peers() {
    use crate::reads::SharedCredentials;
    let key = KeySpec {
        allow: vec!["::ffff:10.0.0.0/104".into()],
        ..spec("m", &[Scope::Read])
    };
    let core = apply_all(&[account(1, "a"), create(2, 1, key)]);
    assert_eq!(
        core.state.credentials.by_key["m"].allow,
        ["::ffff:10.0.0.0/104"]
    );
    let master = crate::master_key::MasterKey::from_bytes([4; 32]);
    let shared = SharedCredentials::new(&core.state.credentials, master);
    let m = shared.get("m").expect("m");
    assert!(m.allows(Some("10.9.8.7".parse().unwrap())));
    assert!(m.allows(Some("::ffff:10.9.8.7".parse().unwrap())));
    assert!(!m.allows(Some("11.0.0.1".parse().unwrap())));
}
