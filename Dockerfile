# Placeholder: the action's image (slim base, locked dependencies) comes with the
# GitHub Action issue.
FROM python:3.12-slim
COPY . /opt/evalgate
RUN pip install --no-cache-dir /opt/evalgate
ENTRYPOINT ["evalgate"]
