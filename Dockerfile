# The backoffice binary in a small runtime image (used by compose.yaml; every role runs from it).
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --bin backoffice

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/backoffice /usr/local/bin/backoffice
ENTRYPOINT ["backoffice"]
