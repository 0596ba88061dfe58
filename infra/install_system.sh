#!/usr/bin/env bash
# System packages a fresh Debian machine needs: Java 17, Maven, Chromium (browser tests, report
# PDFs), fonts, poppler-utils (the report tests render PDFs to PNG with pdftoppm).
# Idempotent: installs only what is missing.
set -euo pipefail
need=()
command -v java >/dev/null || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || need+=(maven)
[ -x /usr/bin/chromium ] || need+=(chromium)
dpkg -s fonts-dejavu-core >/dev/null 2>&1 || need+=(fonts-dejavu-core)
command -v pdftoppm >/dev/null || need+=(poppler-utils)
command -v ss >/dev/null || need+=(iproute2)
command -v setsid >/dev/null || need+=(util-linux)
command -v zip >/dev/null || need+=(zip)    # the cluster's Spark jar archive (infra/cluster.sh)
command -v curl >/dev/null || need+=(curl)  # the cluster daemons' health (REST, JMX)
command -v perf >/dev/null || need+=(linux-perf)  # gridlake agent: hardware counters (perf stat)
if [ ${#need[@]} -gt 0 ]; then
  echo "[gridlake] apt-get install ${need[*]}" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
