# Observability assets of the deployment (deploy/helm/prima/files/prima.rules.yml and
# prima-dashboard.json, docs/observability.md): every metric name they query is one that
# `prima serve` exports (sim and real backends scraped), promtool checks and unit-tests the
# rules, a Prometheus server evaluates the rules and the dashboard's queries against both
# servers. Skipped in part (77) without promtool/prometheus (Debian's prometheus package) or
# the model file.
if(PRIMA_PYTHON3)
  add_test(NAME ObservabilityAssets
           COMMAND ${PRIMA_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/observability_test.py
                   $<TARGET_FILE:prima> ${CMAKE_SOURCE_DIR}/models/SmolLM2-135M-Instruct.Q4_1.gguf)
  set_tests_properties(ObservabilityAssets PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180
                       LABELS deploy)
endif()
