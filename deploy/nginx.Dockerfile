# nginx in front of Context Lens replicas, with the app image's own Streamlit front-end files (same version).
# Built by tools/build_image.sh (context: deploy/), from the same Debian base as the app image:
#   docker build --network host --build-arg APP_IMAGE=context-lens:latest -t context-lens-nginx -f deploy/nginx.Dockerfile deploy
ARG APP_IMAGE=context-lens:latest
FROM ${APP_IMAGE} AS app

FROM debian:bookworm-slim
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends nginx \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log \
 && rm -f /etc/nginx/sites-enabled/default
COPY --from=app /opt/venv/lib/python3.11/site-packages/streamlit/static/static /srv/streamlit-static
# Precompressed copies beside the files, for gzip_static (the originals stay for browsers without gzip).
RUN find /srv/streamlit-static -type f \( -name '*.js' -o -name '*.css' -o -name '*.svg' -o -name '*.json' \
      -o -name '*.map' -o -name '*.ttf' -o -name '*.otf' -o -name '*.txt' -o -name '*.html' \) \
      -exec gzip -k -9 {} +
COPY nginx.conf /etc/nginx/nginx.conf
EXPOSE 8080
CMD ["nginx", "-g", "daemon off;"]
