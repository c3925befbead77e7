"""A webhook's serving certificate judged as kube-apiserver will: each way it can be wrong
is named, with what it is instead."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from phalanx.cluster.pki import write_loopback_serving
from phalanx.kubectl.certificates import judge_certificate

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


def test_a_good_certificate_has_no_problem_and_its_days_left(tmp_path: Path) -> None:
    pair = write_loopback_serving(tmp_path, "webhook", not_after=NOW + timedelta(days=40))
    verdict = judge_certificate(pair.cert.read_bytes(), pair.ca_cert.read_bytes(), "127.0.0.1",
                                NOW)
    assert verdict.problems == ()
    assert verdict.subject == "CN=webhook"
    assert round(verdict.days_left) == 40


def test_an_expired_certificate_says_how_long_ago(tmp_path: Path) -> None:
    pair = write_loopback_serving(tmp_path, "webhook", not_after=NOW - timedelta(days=3))
    verdict = judge_certificate(pair.cert.read_bytes(), pair.ca_cert.read_bytes(), "localhost",
                                NOW)
    assert verdict.problems == (
        "certificate expired 3 days ago (notAfter 2026-12-02 12:00 UTC)",)
    assert verdict.days_left < 0


def test_a_certificate_of_another_ca_names_both(tmp_path: Path) -> None:
    served = write_loopback_serving(tmp_path / "a", "webhook")
    other = write_loopback_serving(tmp_path / "b", "other")
    verdict = judge_certificate(served.cert.read_bytes(), other.ca_cert.read_bytes(),
                                "127.0.0.1", datetime.now(UTC))
    assert verdict.problems == (
        "certificate not signed by the caBundle's CA (issuer CN=webhook-local-ca; "
        "caBundle holds CN=other-local-ca)",)


def test_a_certificate_for_another_host_lists_the_names_it_is_for(tmp_path: Path) -> None:
    pair = write_loopback_serving(tmp_path, "webhook")
    verdict = judge_certificate(pair.cert.read_bytes(), pair.ca_cert.read_bytes(),
                                "phalanx-webhook.phalanx-system.svc", datetime.now(UTC))
    assert verdict.problems == (
        "certificate is not for phalanx-webhook.phalanx-system.svc "
        "(it is for localhost, 127.0.0.1)",)


def test_an_empty_ca_bundle_trusts_nothing(tmp_path: Path) -> None:
    pair = write_loopback_serving(tmp_path, "webhook")
    verdict = judge_certificate(pair.cert.read_bytes(), b"", "127.0.0.1", datetime.now(UTC))
    assert verdict.problems == ("caBundle is empty: the API server cannot verify any certificate",)
