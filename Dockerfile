# syntax=docker/dockerfile:1
# Multi-stage build: a static binary on a distroless, non-root base.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The build context has no .git (.dockerignore), so the version and commit
# `toolrouterd version` and /mcp report come from here:
#   docker build --build-arg VERSION=v1.2.0 --build-arg COMMIT=$(git rev-parse HEAD) .
ARG VERSION=""
ARG COMMIT=""
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" -o /out/toolrouterd ./cmd/toolrouterd \
 && mkdir -p /out/data

# Optional image with Node.js, for stdio MCP servers from npm (docs/mcp.md "MCP both
# ways": mcp_servers entries with command: [npx, -y, "@scope/server"]).
# The default image below has no Node.js (distroless, no shell). Build this
# one with
#   docker build --target with-node \
#     --build-arg MCP_NPM_PACKAGES="@modelcontextprotocol/server-memory@2026.8.31" -t toolrouterd:node .
# Packages named in MCP_NPM_PACKAGES are installed at build time (pinned,
# nothing downloaded when a server starts); the registry then runs them by
# their bin name (command: [mcp-server-memory]) or with npx, which finds
# them installed. BuildKit builds this stage only when asked (--target).
FROM node:22-bookworm-slim AS with-node
ARG MCP_NPM_PACKAGES=""
RUN if [ -n "$MCP_NPM_PACKAGES" ]; then npm install -g --no-audit --no-fund $MCP_NPM_PACKAGES && npm cache clean --force; fi
COPY --from=build /out/toolrouterd /usr/local/bin/toolrouterd
COPY --from=build --chown=node:node /out/data /data
VOLUME /data
# A stdio server inherits HOME and PATH (not toolrouterd's other
# variables); npx keeps its cache under HOME.
USER node:node
ENV TOOLROUTER_ADDR=:8080 \
    TOOLROUTER_STORE=sqlite:///data/toolrouter.db \
    HOME=/home/node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --retries=3 CMD ["/usr/local/bin/toolrouterd", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/toolrouterd"]

# The default image: the static binary alone.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/toolrouterd /usr/local/bin/toolrouterd
# The default SQLite store lives here; mount a volume to keep it.
COPY --from=build --chown=65532:65532 /out/data /data
VOLUME /data
USER nonroot:nonroot
ENV TOOLROUTER_ADDR=:8080 \
    TOOLROUTER_STORE=sqlite:///data/toolrouter.db
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --retries=3 CMD ["/usr/local/bin/toolrouterd", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/toolrouterd"]
