"""A client's name for its upstream is read as the namespace's workload it means."""

from __future__ import annotations

from services.executor.tools.dependency_names import host, words, workload

WORKLOADS = {"ironbark-kyc", "ironbark-aml-screen", "ironbark-geo", "postgres"}


def test_a_clients_name_is_cut_to_its_host() -> None:
    assert host("outbound|8080||geo-eta.maps.svc.cluster.local") == "geo-eta.maps.svc.cluster.local"
    assert host("geo-eta:8080") == "geo-eta"
    assert host("http://geo-eta.maps:8080/v1/eta") == "geo-eta.maps"
    assert host("aml.v1.ScreeningService") == "aml.v1.ScreeningService"
    assert host("[::1]:8080") == "[::1]:8080", "an IPv6 address keeps its colons"


def test_words_split_humps_and_drop_versions_and_generic_words() -> None:
    assert words("aml.v1.ScreeningService") == {"aml", "screening"}
    assert words("geo-eta.maps.svc.cluster.local") == {"geo", "eta", "maps"}
    assert words("HTTPGateway") == {"gateway"}


def test_the_host_or_its_first_dns_label_is_taken_as_it_is() -> None:
    assert workload("postgres:5432", WORKLOADS) == "postgres"
    assert workload("ironbark-geo.ironbark.svc.cluster.local", WORKLOADS) == "ironbark-geo"


def test_a_grpc_service_means_the_one_workload_sharing_its_words() -> None:
    found = workload("aml.v1.ScreeningService", WORKLOADS, namespace="ironbark", own="ironbark-kyc")
    assert found == "ironbark-aml-screen"


def test_no_unique_match_keeps_the_name() -> None:
    two = {"payments-api", "payments-worker-eu", "payments-worker-us"}
    assert workload("payments.worker", two) == "payments.worker", "two workloads fit as well"
    assert workload("billing.v2.InvoiceService", WORKLOADS) == "billing.v2.InvoiceService"
    # the namespace's own word and the alert's service are no match by themselves
    assert workload("ironbark.v1.Ledger", WORKLOADS, namespace="ironbark") == "ironbark.v1.Ledger"
    assert workload("kyc.v1.Kyc", WORKLOADS, own="ironbark-kyc") == "kyc.v1.Kyc"
