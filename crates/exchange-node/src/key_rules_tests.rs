//! A key manages only keys it covers, its children inherit its
//! restrictions, and labels and allow-lists are held to their rules.

use crate::core_state::CoreState;
use crate::entry::LogEntry;
use crate::key_rules::{canonical_allow, check_label, covers, Reach};
use crate::keys::{KeyError, KeySpec, Scope, Scopes};

const SECOND: u64 = 1_000_000_000;

fn spec(key_id: &str, scopes: &[Scope]) -> KeySpec {
    KeySpec {
        key_id: key_id.into(),
        scopes: Scopes::of(scopes),
        ..KeySpec::default()
    }
}

/// Account 1 with its full key `owner`, and `key` made by the operator.
fn with_key(key: KeySpec) -> CoreState {
    let mut core = CoreState::new();
    let entries = [
        LogEntry::CreateAccount {
            ts: SECOND,
            api_key: "owner".into(),
            legacy_secret: None,
        },
        LogEntry::CreateKey {
            ts: SECOND,
            account: 1,
            key,
            by: None,
        },
    ];
    for (n, entry) in entries.iter().enumerate() {
        let applied = core.apply(n as u64 + 1, entry);
        assert_eq!(applied.key_error, None);
    }
    core
}

fn create_by(ts: u64, key: KeySpec, by: &str) -> LogEntry {
    LogEntry::CreateKey {
        ts,
        account: 1,
        key,
        by: Some(by.into()),
    }
}

fn rotate_by(key_id: &str, by: &str) -> LogEntry {
    LogEntry::RotateKey {
        ts: 2 * SECOND,
        key_id: key_id.into(),
        account: Some(1),
        new_key_id: "new".into(),
        ed25519: None,
        by: Some(by.into()),
    }
}

fn revoke_by(key_id: &str, by: &str) -> LogEntry {
    LogEntry::RevokeKey {
        ts: 2 * SECOND,
        key_id: key_id.into(),
        account: Some(1),
        by: Some(by.into()),
    }
}

#[test]
fn a_narrower_key_neither_rotates_nor_revokes_a_wider_one() {
    let mut core = with_key(spec("mover", &[Scope::Transfer]));
    let before = core.state.credentials.clone();
    for (n, entry) in [rotate_by("owner", "mover"), revoke_by("owner", "mover")]
        .iter()
        .enumerate()
    {
        let applied = core.apply(3 + n as u64, entry);
        assert_eq!(applied.key_error, Some(KeyError::NotCovered), "{entry:?}");
    }
    assert_eq!(core.state.credentials, before);
    // The wider key manages the narrower one, and a key itself.
    assert_eq!(core.apply(5, &rotate_by("mover", "owner")).key_error, None);
    assert_eq!(core.apply(6, &revoke_by("new", "new")).key_error, None);
}

#[test]
fn a_child_inherits_its_parents_restrictions_and_asks_for_no_more() {
    let parent = KeySpec {
        allow: vec!["10.0.0.0/8".into()],
        expires_in_secs: Some(30),
        ..spec("parent", &[Scope::Read, Scope::Transfer])
    };
    let mut core = with_key(parent);
    let parent_expiry = core.state.credentials.by_key["parent"].expires_at;
    let applied = core.apply(
        3,
        &create_by(2 * SECOND, spec("child", &[Scope::Read]), "parent"),
    );
    assert_eq!(applied.key_error, None);
    let child = &core.state.credentials.by_key["child"];
    assert_eq!(
        (&child.allow[..], child.expires_at),
        (&["10.0.0.0/8".to_string()][..], parent_expiry)
    );

    let wider = [
        spec("w1", &[Scope::Trade]),
        KeySpec {
            allow: vec!["10.0.0.0/7".into()],
            ..spec("w2", &[Scope::Read])
        },
        KeySpec {
            allow: vec!["10.1.0.0/16".into(), "11.0.0.1".into()],
            ..spec("w3", &[Scope::Read])
        },
        KeySpec {
            expires_in_secs: Some(30),
            ..spec("w4", &[Scope::Read])
        },
    ];
    let before = core.state.credentials.clone();
    for (n, key) in wider.into_iter().enumerate() {
        let applied = core.apply(4 + n as u64, &create_by(2 * SECOND, key, "parent"));
        assert_eq!(applied.key_error, Some(KeyError::NotCovered));
    }
    assert_eq!(core.state.credentials, before);

    let narrower = KeySpec {
        allow: vec!["10.1.0.0/16".into()],
        expires_in_secs: Some(5),
        ..spec("n", &[Scope::Read])
    };
    let applied = core.apply(9, &create_by(2 * SECOND, narrower, "parent"));
    assert_eq!(applied.key_error, None);
}

#[test]
fn a_revoked_or_expired_key_manages_nothing() {
    let parent = KeySpec {
        expires_in_secs: Some(10),
        ..spec("parent", &[Scope::Read, Scope::Transfer])
    };
    let mut core = with_key(parent);
    let late = 20 * SECOND;
    let applied = core.apply(3, &create_by(late, spec("c", &[Scope::Read]), "parent"));
    assert_eq!(applied.key_error, Some(KeyError::ManagerGone));
    let applied = core.apply(4, &create_by(late, spec("c", &[Scope::Read]), "gone"));
    assert_eq!(applied.key_error, Some(KeyError::ManagerGone));
    // Another account's key does not manage this one's.
    let other = LogEntry::CreateAccount {
        ts: late,
        api_key: "other".into(),
        legacy_secret: None,
    };
    assert_eq!(core.apply(5, &other).key_error, None);
    let applied = core.apply(6, &create_by(late, spec("c", &[Scope::Read]), "other"));
    assert_eq!(applied.key_error, Some(KeyError::ManagerGone));
}

#[test]
fn covering_compares_scopes_allow_lists_and_expiry() {
    let anywhere: Vec<String> = Vec::new();
    let ten = vec!["10.0.0.0/8".to_string()];
    let mapped = vec!["::ffff:10.1.2.3".to_string()];
    let reach = |scopes: &[Scope], allow, expires_at| Reach {
        scopes: Scopes::of(scopes),
        allow,
        expires_at,
    };
    let full = reach(&Scope::ALL, &anywhere, None);
    let bound = reach(&Scope::ALL, &ten, Some(100));
    assert!(covers(&full, &bound));
    assert!(!covers(&bound, &full));
    assert!(covers(&bound, &reach(&[Scope::Read], &mapped, Some(100))));
    assert!(!covers(&bound, &reach(&[Scope::Read], &ten, Some(101))));
    assert!(!covers(&bound, &reach(&[Scope::Read], &ten, None)));
    assert!(!covers(&bound, &reach(&[Scope::Read], &anywhere, Some(1))));
}

#[test]
fn ipv4_mapped_allow_entries_are_stored_as_ipv4() {
    let written = [
        "::ffff:192.0.2.7",
        "::FFFF:192.0.2.0/120",
        "::ffff:0:0/96",
        "2001:db8::1/64",
        "192.0.2.9",
    ]
    .map(String::from);
    assert_eq!(
        canonical_allow(&written).unwrap(),
        [
            "192.0.2.7/32",
            "192.0.2.0/24",
            "0.0.0.0/0",
            "2001:db8::/64",
            "192.0.2.9/32"
        ]
    );
}

#[test]
fn labels_are_bounded_printable_text() {
    for good in ["", "desk 1 — algo", "Zürich 東京", "a-b_c.d (e) 😀"] {
        assert_eq!(check_label(good), Ok(()), "{good:?}");
    }
    let long = "é".repeat(33);
    for bad in [
        "a\u{202E}b",
        "a\u{2067}b",
        "a\u{200B}b",
        "a\u{FEFF}b",
        "a\u{AD}b",
        "a\u{E0041}b",
        "a\u{7}b",
        "a\u{85}b",
        "a\nb",
        "a\u{2028}b",
        "a\u{E000}b",
        &long,
    ] {
        assert_eq!(check_label(bad), Err(KeyError::InvalidLabel), "{bad:?}");
    }
}
