/*
 * Tidemark's launcher for Apache Iceberg's REST catalog server (the code behind the
 * apache/iceberg-rest-fixture image), compiled by `tidemark stack up`.
 *
 * Why not RESTCatalogServer's own main: it listens on every address of the machine, and no
 * property changes that. This launcher serves the same servlet on one address only, and never
 * logs the catalog's properties, which hold the database password and the S3 secret.
 *
 * It lives in org.apache.iceberg.rest because the fixture's adapter and catalog context are
 * package-private.
 */
package org.apache.iceberg.rest;

import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;
import org.eclipse.jetty.compression.gzip.GzipCompression;
import org.eclipse.jetty.compression.server.CompressionHandler;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public final class TidemarkRestCatalog {
  private static final Logger LOG = LoggerFactory.getLogger(TidemarkRestCatalog.class);

  private TidemarkRestCatalog() {}

  public static void main(String[] args) throws Exception {
    // CATALOG_* variables, named as the fixture names them: CATALOG_IO__IMPL -> io-impl
    Map<String, String> properties = RCKUtils.environmentCatalogConfig();
    String host = required(properties, "rest.host", "CATALOG_REST_HOST");
    int port = Integer.parseInt(required(properties, "rest.port", "CATALOG_REST_PORT"));
    String name = required(properties, "catalog.name", "CATALOG_CATALOG_NAME");

    Catalog backend = CatalogUtil.buildIcebergCatalog(name, properties, new Configuration());
    RESTCatalogServer.CatalogContext context =
        new RESTCatalogServer.CatalogContext(backend, properties);

    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost(host);
    connector.setPort(port);
    server.addConnector(connector);
    server.setHandler(servletContext(context));
    // SIGTERM (`tidemark stack down`) stops Jetty cleanly through the JVM's shutdown hooks
    server.setStopAtShutdown(true);
    server.start();
    LOG.info("Iceberg REST catalog '{}' listening on http://{}:{}", name, host, port);
    server.join();
  }

  private static ServletContextHandler servletContext(RESTCatalogServer.CatalogContext context) {
    ServletContextHandler handler = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    RESTCatalogServlet servlet = new RESTCatalogServlet(new RESTServerCatalogAdapter(context));
    handler.addServlet(new ServletHolder(servlet), "/*");
    // table metadata is large JSON: compress it for clients that ask, as the fixture does
    CompressionHandler compression = new CompressionHandler();
    compression.putCompression(new GzipCompression());
    handler.insertHandler(compression);
    return handler;
  }

  private static String required(Map<String, String> properties, String key, String variable) {
    String value = properties.get(key);
    if (value == null || value.isEmpty()) {
      throw new IllegalArgumentException(
          variable + " is not set: the launcher needs it (tidemark stack up sets it)");
    }
    return value;
  }
}
