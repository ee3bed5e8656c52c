# The Helm chart (deploy/helm/prima): helm lint, the default and seed values rendered and
# validated against the Kubernetes 1.31 schemas (kubernetes-validate), behaviour, render-time
# refusals of values that cannot work, the HPA metric allow-list against `prima serve`, and
# the chart's launch script starting a PP2 replica under mpirun. Needs helm
# (scripts/fetch-helm.sh; skipped, 77, without it) and kubernetes-validate (scripts/test.sh
# installs both). Label: deploy.
if(PRIMA_PYTHON3)
  add_test(NAME HelmChart
           COMMAND ${PRIMA_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/helm_chart_test.py --prima $<TARGET_FILE:prima>)
  set_tests_properties(HelmChart PROPERTIES LABELS deploy SKIP_RETURN_CODE 77 TIMEOUT 180)
endif()
