# gridlake: `make help` lists the targets. Every target installs what it needs first (idempotent).
SHELL := /bin/bash
.DEFAULT_GOAL := help
export GRIDLAKE_HOME ?= $(CURDIR)/.gridlake
VENV := $(GRIDLAKE_HOME)/venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: help install up down status demo test test-demo test-nightly test-realdata test-unit test-cluster test-faults cluster-up cluster-down cluster-status cluster-demo lint format bench docs clean-test

help: ## show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[1m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

install: ## install everything a fresh machine needs (apt, venvs, Kafka/Derby/Spark jars)
	@bash infra/install_system.sh
	@bash infra/install.sh

up: install ## start Derby (metastore), Kafka, the gridlake Spark server, the Spark Thrift Server and Superset on 127.0.0.1
	@bash infra/derby.sh start
	@bash infra/kafka.sh start
	@bash infra/spark_server.sh start
	@$(VENV)/bin/gridlake init
	@bash infra/thrift.sh start
	@bash infra/superset.sh start

down: ## stop every service of the instance, by PID
	@bash infra/airflow.sh stop
	@bash infra/spark_server.sh stop
	@bash infra/superset.sh stop
	@bash infra/thrift.sh stop
	@bash infra/kafka.sh stop
	@bash infra/derby.sh stop

status: ## show what runs
	@bash infra/derby.sh status; bash infra/kafka.sh status; bash infra/spark_server.sh status; bash infra/thrift.sh status; bash infra/superset.sh status; bash infra/airflow.sh status

demo: up ## the main job: simulated weeks -> Kafka -> Airflow DAGs -> gold, weekly reports, Superset; Airflow left running
	@bash infra/demo.sh

test: install ## unit and integration tests against real Kafka, Spark, Delta, Airflow, Superset (two shards side by side; the warehouse shard's data built by make demo itself, cold then warm, on one week), and a third lane beside them with the short forms of the fault trials, the cluster (cluster-up on an instance of its own, a YARN application over HDFS) and the bench (tiny scale, three stages) (GRIDLAKE_TEST_FAULTS / _CLUSTER / _BENCH=off skips one; GRIDLAKE_TEST_DEMO=full adds the shipped demo)
	@GRIDLAKE_TEST_DEMO=$${GRIDLAKE_TEST_DEMO:-short} GRIDLAKE_TEST_FAULTS=$${GRIDLAKE_TEST_FAULTS:-short} GRIDLAKE_TEST_CLUSTER=$${GRIDLAKE_TEST_CLUSTER:-short} GRIDLAKE_TEST_BENCH=$${GRIDLAKE_TEST_BENCH:-short} PYTEST_MARK="not nightly and not demo and not cluster and not faults and not bench_short" bash infra/test.sh $(PYTEST_ARGS)

test-faults: install ## the fault trials in full: SIGKILL of publish, ingest, refine, analyze at seeded random moments (GRIDLAKE_FAULT_ROUNDS=5: 20 kills, ~90 min on 2 cores), each then checked against an uninterrupted run; refine on a full disk (a size-limited tmpfs) and with Derby restarted; Kafka restarted during publish and ingest; the node agent killed at random moments (8, half with the broker restarted); the Thrift Server killed while a dashboard loads; make test runs 1 round of ingest and refine kills
	@GRIDLAKE_TEST_INSTANCE=test-faults GRIDLAKE_PORT_OFFSET=1200 GRIDLAKE_FAULT_ROUNDS=$${GRIDLAKE_FAULT_ROUNDS:-5} $(VENV)/bin/pytest -m faults tests/faults $(PYTEST_ARGS)

test-demo: install ## make demo as a newcomer runs it, on its own instance: cold, warm, summary, Try commands, dashboards, make down
	@GRIDLAKE_INSTANCE=test $(VENV)/bin/pytest -m demo tests/test_demo.py $(PYTEST_ARGS)

test-nightly: install ## the full end-to-end DAG runs on a simulated three-week grid (make test runs their short form on the demo week)
	@GRIDLAKE_INSTANCE=test $(VENV)/bin/pytest -m nightly $(PYTEST_ARGS)

test-realdata: install ## the real traces whole: the LPC-EGEE grid trace and both HPC logs (446,177 jobs) through Kafka to gold, against pandas on the raw files (~4 min quiet; make test takes the LPC trace's first 30,000 jobs and the HPC logs' first 4,000)
	@GRIDLAKE_INSTANCE=test GRIDLAKE_REALDATA_JOBS=all $(VENV)/bin/pytest tests/test_realdata_pipeline.py $(PYTEST_ARGS)

test-unit: install ## only the tests that need no service
	@GRIDLAKE_INSTANCE=test $(VENV)/bin/pytest -m "not integration" $(PYTEST_ARGS)

cluster-up: install ## start the pseudo-distributed cluster (instance `cluster`): HDFS NameNode + 2 DataNodes, YARN RM + NM, 3 Kafka brokers, Hive metastore, Thrift Server on YARN, Superset, on 127.0.0.1
	@GRIDLAKE_INSTANCE=cluster bash infra/cluster.sh up

cluster-down: ## stop every daemon of the cluster instance, by PID
	@GRIDLAKE_INSTANCE=cluster bash infra/cluster.sh down

cluster-demo: cluster-up ## make demo on the cluster: the demo weeks through the Airflow DAGs, every job a YARN application, the warehouse on HDFS (GRIDLAKE_DEMO_WEEKS / _JOBS as for make demo)
	@GRIDLAKE_INSTANCE=cluster bash infra/demo.sh

cluster-status: ## one JSON line per cluster daemon (service, address, web, healthy); exit 1 if any is unhealthy
	@GRIDLAKE_INSTANCE=cluster bash infra/cluster.sh status

test-cluster: install ## the cluster tests in full (wipes, starts and stops the cluster instance; the demo week against local mode, broker, DataNode and executor kills); make test runs their short form on an instance of its own
	@GRIDLAKE_INSTANCE=test $(VENV)/bin/pytest -m cluster tests/test_cluster.py $(PYTEST_ARGS)

BENCH_INSTANCE ?= bench
BENCH_PORT_OFFSET ?= 400
bench: install ## speed/memory figures vs same-run references (BENCH_SCALE=tiny|small|standard|full; BENCH_ARGS="--only STAGE,..."; its own instance, BENCH_INSTANCE=bench*, BENCH_PORT_OFFSET)
	@GRIDLAKE_INSTANCE=$(BENCH_INSTANCE) GRIDLAKE_PORT_OFFSET=$(BENCH_PORT_OFFSET) $(PY) -m gridlake.ops.bench $(BENCH_ARGS)

docs: install ## regenerate the table reference (sql/grid/README.md), views, assets and DAG manifest from the code
	@$(VENV)/bin/gridlake docs

lint: ## ruff lint and format check
	@$(VENV)/bin/ruff check jobs tests dags superset
	@$(VENV)/bin/ruff format --check jobs tests dags superset

format: ## ruff format and autofix
	@$(VENV)/bin/ruff format jobs tests dags superset
	@$(VENV)/bin/ruff check --fix jobs tests dags superset

clean-test: ## stop the test instances (both shards of make test, its demo test, fault trials, cluster and bench short forms) and delete their state
	@GRIDLAKE_INSTANCE=test $(MAKE) --no-print-directory down
	@GRIDLAKE_INSTANCE=test-grid GRIDLAKE_PORT_OFFSET=300 $(MAKE) --no-print-directory down
	@GRIDLAKE_INSTANCE=demo-ci GRIDLAKE_PORT_OFFSET=600 $(MAKE) --no-print-directory down
	@GRIDLAKE_INSTANCE=test-faults GRIDLAKE_PORT_OFFSET=1200 $(MAKE) --no-print-directory down
	@if [ -f $(GRIDLAKE_HOME)/test-cluster/cluster.env ]; then GRIDLAKE_INSTANCE=test-cluster bash infra/cluster.sh down; fi
	@GRIDLAKE_INSTANCE=bench-ci GRIDLAKE_PORT_OFFSET=1600 $(MAKE) --no-print-directory down
	@rm -rf $(GRIDLAKE_HOME)/test $(GRIDLAKE_HOME)/test-grid $(GRIDLAKE_HOME)/test-demo $(GRIDLAKE_HOME)/demo-ci $(GRIDLAKE_HOME)/test-faults $(GRIDLAKE_HOME)/pytest-warehouse $(GRIDLAKE_HOME)/pytest-grid $(GRIDLAKE_HOME)/pytest-demo $(GRIDLAKE_HOME)/pytest-faults $(GRIDLAKE_HOME)/test-cluster $(GRIDLAKE_HOME)/bench-ci $(GRIDLAKE_HOME)/pytest-short
