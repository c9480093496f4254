# The evalgate GitHub Action's image. A workflow that pins a commit of the action builds it
# from this file on every run; release.yml pushes it prebuilt on a tag (docs/action.md).
# No USER and no WORKDIR, as GitHub asks of container actions: the runner starts the
# container as root with the workspace mounted at /github/workspace as its working folder.
FROM python:3.12-slim

# No bytecode written at run time, unbuffered logs, no pip cache or version check.
# pip still compiles the installed packages at build time, so start-up stays quick.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Dependencies first, in their own layer: rebuilt only when the lock changes. The lock pins
# the judge and vertex extras and not embeddings, so no torch in the image. Regenerate it
# with the command at its top. All wheels exist for 3.12; rouge-score builds from its sdist.
COPY requirements.lock /opt/evalgate/requirements.lock
RUN python -m pip install --no-cache-dir -r /opt/evalgate/requirements.lock

# Then evalgate itself (the adk-evalgate distribution, from this checkout, never from the
# registry), without dependencies: every one of them is in the lock.
COPY pyproject.toml README.md /tmp/evalgate-src/
COPY evalgate /tmp/evalgate-src/evalgate
RUN python -m pip install --no-cache-dir --no-deps /tmp/evalgate-src \
    && rm -rf /tmp/evalgate-src
COPY entrypoint /opt/evalgate/entrypoint

ENTRYPOINT ["python", "/opt/evalgate/entrypoint/main.py"]
