# syntax=docker/dockerfile:1
# Multi-stage build: a static binary on a distroless, non-root base.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/toolrouterd ./cmd/toolrouterd \
 && mkdir -p /out/data

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
