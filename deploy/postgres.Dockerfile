# PostgreSQL 15 from Debian, for the replicas' shared state (CONTEXT_LENS_DB); started by `tools/up.sh --db` on the
# setup's internal network only. Same Debian base as the app image; built with the host's network for apt-get:
#   docker build --network host -t context-lens-postgres -f deploy/postgres.Dockerfile deploy
FROM debian:bookworm-slim
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15 \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log \
 && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
 && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
COPY postgres-start.sh /usr/local/bin/postgres-start.sh
USER postgres
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
EXPOSE 5432
HEALTHCHECK --interval=5s --timeout=5s --start-period=30s --retries=5 \
  CMD pg_isready -h 127.0.0.1 -U context_lens -d context_lens
CMD ["sh", "/usr/local/bin/postgres-start.sh"]
