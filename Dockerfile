# The tracebound image: every role of the pipeline, run by compose/docker-compose.yml.
#
#   docker build -t tracebound .
#   docker run --rm tracebound tracebound --help
#
# The project is installed with the tested versions of its dependencies
# (constraints.txt) into a virtualenv, which alone is copied into the final image.
# The application folders (services/, projections/ …) ship inside the package as
# tracebound/_app; PYTHONPATH names that folder, so a role runs as
# `python -m services.<role>` (or `python -m projections`), as `tracebound up` runs it.
# The image holds no secrets: every setting comes from the environment at run time.

FROM python:3.11-slim AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/tracebound \
    PATH=/opt/tracebound/bin:$PATH

WORKDIR /src
COPY . .
RUN python -m venv "$VIRTUAL_ENV" && pip install -c constraints.txt .

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    MALLOC_ARENA_MAX=2 \
    VIRTUAL_ENV=/opt/tracebound \
    PATH=/opt/tracebound/bin:$PATH \
    PYTHONPATH=/opt/tracebound/lib/python3.11/site-packages/tracebound/_app

COPY --from=build /opt/tracebound /opt/tracebound
# Fail the build, not the first start, if the application folders are not where
# PYTHONPATH says; then a system user without a home or a login shell runs everything.
RUN python -c "import services.ingest, projections" \
    && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin tracebound

USER tracebound
WORKDIR /tmp
CMD ["tracebound", "--help"]
