"""Retry tokens, the key file, retries and idempotent replay (library level)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from ledger_facts import CONTINUITY, FIXED, OK, REVIEW
from stoprule import Evaluator
from stoprule.diagnostics import FactError
from stoprule.ledger import Ledger, LedgerError, Recorder, TokenError, keys, tokens, verify
from stoprule.ledger.keys import KeyRing


@pytest.fixture
def ledger(tmp_path: Path):
    with Ledger.open(str(tmp_path / "ledger.db")) as led:
        yield led


@pytest.fixture
def rec(ledger: Ledger, evaluator: Evaluator) -> Recorder:
    return Recorder(ledger, evaluator)


def count(ledger: Ledger) -> int:
    return ledger.connection.execute("SELECT count(*) FROM events").fetchone()[0]


# ---------------------------------------------------------------------- hashing without OpenSSL


def test_sha_agrees_with_hashlib_and_hmac() -> None:
    """``ledger.sha`` (CPython's built-in SHA-256, no OpenSSL) gives what hashlib and hmac give."""
    import hashlib
    import hmac
    import random

    from stoprule.ledger import sha

    rng = random.Random(7)
    sizes = [0, 1, 55, 56, 63, 64, 65, 127, 128, 129, 1000, 100_000]
    for key_size in [0, 1, 32, 63, 64, 65, 200]:
        key = rng.randbytes(key_size)
        for size in sizes:
            msg = rng.randbytes(size)
            assert sha.sha256_hex(msg) == hashlib.sha256(msg).hexdigest()
            assert sha.hmac_sha256(key, msg) == hmac.new(key, msg, hashlib.sha256).digest()
    mac = hmac.new(b"k", b"m", hashlib.sha256).digest()
    assert sha.compare_digest(mac, bytes(mac)) and not sha.compare_digest(mac, mac[:-1] + b"\0")
    assert not sha.compare_digest(mac, mac[:-1])


# ---------------------------------------------------------------------- the key file


def test_key_file_is_created_on_first_use_with_mode_0600(rec: Recorder, ledger: Ledger) -> None:
    path = Path(ledger.keys_path)
    assert not path.exists()  # an empty ledger has nothing to sign
    rec.record("r", OK)
    assert path.exists() and stat.S_IMODE(path.stat().st_mode) == 0o600  # the first decision signs the ledger head
    assert ledger.head().key == "k1"
    out = rec.record("r", CONTINUITY)
    ring = keys.load(str(path))
    assert ring.active == "k1" and list(ring.keys) == ["k1"]
    assert out.token.startswith("srt1.k1.")
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".stoprule-keys-")]  # no temp file left


def test_concurrent_first_use_agrees_on_one_key(tmp_path: Path) -> None:
    path = str(tmp_path / "l.db.keys")
    pids = []
    for _ in range(6):
        pid = os.fork()
        if pid == 0:  # child: race to create the key file
            try:
                ring = keys.ensure(path)
                with open(f"{path}.{os.getpid()}", "w") as fh:
                    fh.write(ring.keys["k1"].to_dict(secret=True)["secret"])
            finally:
                os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    secrets = {Path(f"{path}.{pid}").read_text() for pid in pids}
    assert secrets == {keys.load(path).keys["k1"].to_dict(secret=True)["secret"]}


def test_rotate_and_retire(rec: Recorder, ledger: Ledger) -> None:
    old = rec.record("r", CONTINUITY).token
    ring, key = keys.rotate(ledger)
    assert (key.id, ring.active) == ("k2", "k2")
    assert tokens.verify(keys.load(ledger.keys_path), old).key == "k1"  # old keys keep verifying
    new = Recorder(ledger, rec.evaluator).record("r2", CONTINUITY).token
    assert new.startswith("srt1.k2.")
    with pytest.raises(LedgerError, match="rotate` first") as exc:
        keys.retire(ledger, "k2")
    assert exc.value.code == "ledger.active_key"
    with pytest.raises(LedgerError, match="no key 'k9'"):
        keys.retire(ledger, "k9")
    ring, changed = keys.retire(ledger, "k1")
    assert changed and ring.keys["k1"].secret is None and ring.keys["k1"].retired
    assert keys.retire(ledger, "k1")[1] is False
    with pytest.raises(TokenError, match="retired") as exc:
        tokens.verify(keys.load(ledger.keys_path), old)
    assert exc.value.code == "token.retired_key"
    assert stat.S_IMODE(os.stat(ledger.keys_path).st_mode) == 0o600
    assert "secret" not in json.dumps(ring.keys["k1"].to_dict())


def test_bad_key_files_are_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "l.db.keys"
    for text in ("not json", '{"format": "other"}', '{"format": "stoprule-keys/1", "keys": [{"id": "k1"}]}'):
        path.write_text(text)
        path.chmod(0o600)
        with pytest.raises(LedgerError, match="is not valid") as exc:
            keys.ensure(str(path))
        assert exc.value.code == "ledger.keys_corrupt"
        assert path.read_text() == text
    path.write_text(KeyRing(str(path), None, {}).to_json())
    path.chmod(0o644)
    with pytest.raises(LedgerError, match="chmod 600") as exc:
        keys.load(str(path))
    assert exc.value.code == "ledger.keys_exposed"


# ---------------------------------------------------------------------- tokens


@pytest.fixture
def ring(tmp_path: Path) -> KeyRing:
    return keys.ensure(str(tmp_path / "k.keys"))


def test_token_round_trip_binds_run_node_attempt_and_key(ring: KeyRing) -> None:
    tok = tokens.mint(ring, "run-1", "n7", 3)
    assert tokens.verify(ring, tok) == tokens.Claims("run-1", "n7", 3, "k1")
    assert tokens.mint(ring, "run-1", "n7", 3) == tok  # deterministic for one key


def test_forged_tokens_are_refused(ring: KeyRing) -> None:
    tok = tokens.mint(ring, "r", "n1", 1)
    prefix, kid, payload, sig = tok.split(".")
    other_payload = tokens.mint(ring, "r", "n2", 1).split(".")[2]
    flipped = sig[:10] + ("A" if sig[10] != "A" else "B") + sig[11:]
    for forged in (f"{prefix}.{kid}.{other_payload}.{sig}", f"{prefix}.{kid}.{payload}.{flipped}"):
        with pytest.raises(TokenError, match="forged or altered") as exc:
            tokens.verify(ring, forged)
        assert exc.value.code == "token.forged"
    other = keys.ensure(str(Path(ring.path).with_name("other.keys")))
    with pytest.raises(TokenError) as exc:  # signed by another ledger's k1
        tokens.verify(ring, tokens.mint(other, "r", "n1", 1))
    assert exc.value.code == "token.forged"
    with pytest.raises(TokenError, match="never had") as exc:
        tokens.verify(ring, f"{prefix}.k9.{payload}.{sig}")
    assert exc.value.code == "token.unknown_key"


def test_every_truncation_is_refused_as_truncated(ring: KeyRing) -> None:
    tok = tokens.mint(ring, "r", "n1", 1)
    for i in range(len(tok)):
        with pytest.raises(TokenError) as exc:
            tokens.verify(ring, tok[:i])
        assert exc.value.code == ("token.malformed" if i == 0 else "token.truncated"), (i, tok[:i])


@pytest.mark.parametrize(
    "bad", ["hello", "srt2.k1.x.y", "srt1.k1.a.b.c", "srt1.k1.abc." + "!" * 43, "srt1.k1.a." + "A" * 44]
)
def test_malformed_tokens_are_refused(ring: KeyRing, bad: str) -> None:
    with pytest.raises(TokenError) as exc:
        tokens.verify(ring, bad)
    assert exc.value.code == "token.malformed"


def test_signatures_are_compared_in_constant_time(ring: KeyRing, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []
    real = tokens.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        seen.append((len(a), len(b)))
        return real(a, b)

    monkeypatch.setattr(tokens, "compare_digest", spy)
    tok = tokens.mint(ring, "r", "n1", 1)
    tokens.verify(ring, tok)
    with pytest.raises(TokenError):
        tokens.verify(ring, tok[:-5] + ("A" if tok[-5] != "A" else "B") + tok[-4:])
    assert seen == [(32, 32), (32, 32)]


def test_a_signature_has_one_spelling(ring: KeyRing) -> None:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    tok = tokens.mint(ring, "r", "n1", 1)
    # the last of 43 base64 characters carries 4 bits of the MAC and 2 unused bits: flip an unused one
    twin = tok[:-1] + alphabet[alphabet.index(tok[-1]) ^ 1]
    assert keys.unb64url(twin.split(".")[3]) == keys.unb64url(tok.split(".")[3])
    with pytest.raises(TokenError) as exc:
        tokens.verify(ring, twin)
    assert exc.value.code == "token.malformed"


# ---------------------------------------------------------------------- retry and replay


def test_retry_appends_a_child_of_the_blocked_node(rec: Recorder, ledger: Ledger) -> None:
    rec.record("r", OK)
    blocked = rec.record("r", CONTINUITY)
    again = rec.retry("r", blocked.token, CONTINUITY)  # still blocked: chained, with a new token
    assert (again.node.parent, again.node.edge, again.node.retry_of) == ("n2", "retry", "n2")
    assert (again.node.kind, again.node.attempt, again.token is not None) == ("blocked_attempt", 2, True)
    assert again.token != blocked.token
    done = rec.retry("r", again.token, FIXED)
    assert (done.node.node, done.node.kind, done.node.attempt, done.token) == ("n4", "step", 3, None)
    assert done.verdict.ok and done.node.parent == "n3"
    st = ledger.status("r")
    assert (st.tip, st.tip_kind, st.decisions, st.blocked, st.attempt) == ("n4", "step", 4, 2, 3)
    assert verify(ledger).ok


def test_replay_with_the_same_fact_returns_the_recorded_outcome(rec: Recorder, ledger: Ledger) -> None:
    blocked = rec.record("r", CONTINUITY)
    first = rec.retry("r", blocked.token, FIXED)
    n = count(ledger)
    reordered = json.loads(json.dumps(FIXED, sort_keys=True))  # same fact, other key order: same digest
    again = rec.retry("r", blocked.token, reordered)
    assert again.replayed and not first.replayed
    assert again.node == first.node and again.verdict == first.verdict
    assert count(ledger) == n  # nothing appended
    env = again.envelope()
    assert env["replayed"] is True and env["node"] == first.node.node


def test_replay_of_a_blocked_retry_remints_its_token(rec: Recorder, ledger: Ledger) -> None:
    blocked = rec.record("r", CONTINUITY)
    first = rec.retry("r", blocked.token, CONTINUITY)
    assert rec.retry("r", blocked.token, CONTINUITY).token == first.token
    keys.rotate(ledger)
    replay = Recorder(ledger, rec.evaluator).retry("r", blocked.token, CONTINUITY)  # k1 still verifies
    assert replay.token.startswith("srt1.k2.") and replay.node == first.node  # re-signed, same node
    assert tokens.verify(keys.load(ledger.keys_path), replay.token)[:3] == ("r", first.node.node, 2)


def test_a_used_token_with_a_different_fact_is_refused(rec: Recorder, ledger: Ledger) -> None:
    blocked = rec.record("r", CONTINUITY)
    rec.retry("r", blocked.token, FIXED)
    n = count(ledger)
    with pytest.raises(TokenError, match="already used: node n1 was retried as n2") as exc:
        rec.retry("r", blocked.token, OK)
    assert exc.value.code == "token.consumed" and count(ledger) == n


def test_foreign_run_token_is_refused(rec: Recorder, ledger: Ledger) -> None:
    blocked = rec.record("a", CONTINUITY)
    rec.record("b", CONTINUITY)
    with pytest.raises(TokenError, match="belongs to run 'a', not 'b'") as exc:
        rec.retry("b", blocked.token, FIXED)
    assert exc.value.code == "token.foreign_run"
    assert ledger.status("b").decisions == 1


def test_terminal_blocks_mint_no_token_and_refuse_retries(rec: Recorder, ledger: Ledger) -> None:
    out = rec.record("r", REVIEW)
    assert out.token is None and "retry_token" not in out.envelope()
    # a validly signed token for the terminal node (which stoprule never issues) is still refused
    forged = tokens.mint(keys.ensure(ledger.keys_path), "r", out.node.node, 1)
    with pytest.raises(TokenError, match="terminal block .*cannot be retried") as exc:
        rec.retry("r", forged, OK)
    assert exc.value.code == "token.terminal"
    step = rec.record("r", OK)
    with pytest.raises(TokenError, match="not a blocked attempt"):
        rec.retry("r", tokens.mint(keys.load(ledger.keys_path), "r", step.node.node, 1), OK)
    with pytest.raises(TokenError, match="no node 'n9'"):
        rec.retry("r", tokens.mint(keys.load(ledger.keys_path), "r", "n9", 1), OK)
    assert ledger.status("r").decisions == 2


def test_a_stale_attempt_is_refused(rec: Recorder, ledger: Ledger) -> None:
    blocked = rec.record("r", CONTINUITY)
    stale = tokens.mint(keys.load(ledger.keys_path), "r", blocked.node.node, 5)
    with pytest.raises(TokenError, match="attempt 5 of n1, not 1") as exc:
        rec.retry("r", stale, FIXED)
    assert exc.value.code == "token.stale"


def test_retry_without_any_key_file_is_refused(rec: Recorder, ledger: Ledger, tmp_path: Path) -> None:
    other = keys.ensure(str(tmp_path / "elsewhere.keys"))
    with pytest.raises(TokenError, match="no signing keys exist") as exc:
        rec.retry("r", tokens.mint(other, "r", "n1", 1), OK)
    assert exc.value.code == "token.unknown_key"


def test_invalid_corrected_fact_records_nothing(rec: Recorder, ledger: Ledger) -> None:
    blocked = rec.record("r", CONTINUITY)
    with pytest.raises(FactError):
        rec.retry("r", blocked.token, {"status": "nonsense"})
    assert count(ledger) == 1 and rec.retry("r", blocked.token, FIXED).node.node == "n2"


def test_a_retry_won_elsewhere_between_check_and_lock_is_replayed(
    rec: Recorder, ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = rec.record("r", CONTINUITY)
    winner = Recorder(ledger, rec.evaluator).retry("r", blocked.token, FIXED)
    real = Ledger.retry_of
    calls = []

    def stale_first(self: Ledger, run: str, node: str):  # noqa: ANN202
        calls.append(node)
        return None if len(calls) == 1 else real(self, run, node)  # the pre-check saw no retry yet

    monkeypatch.setattr(Ledger, "retry_of", stale_first)
    late = rec.retry("r", blocked.token, FIXED)
    assert late.replayed and late.node == winner.node and len(calls) == 2
    assert count(ledger) == 2
    calls.clear()
    with pytest.raises(TokenError, match="already used"):
        rec.retry("r", blocked.token, OK)
