// The Hive metastore as a service of its own (thrift), bound to one address.
//
// Hive's own launcher (org.apache.hadoop.hive.metastore.HiveMetaStore, in the Hive 2.3 jars that
// pyspark ships) listens on every interface and has no bind-host setting; this is the same
// server (the same handler, processor and thrift server class) bound to the address given.
// Its configuration (the database it keeps the catalog in, the warehouse root) is the
// hive-site.xml on the class path, written by infra/metastore.sh.
//
// Usage: java -cp CONF:CLASSES:JARS GridlakeMetastore HOST PORT
import java.net.InetSocketAddress;

import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.api.ThriftHiveMetastore;
import org.apache.hadoop.hive.metastore.TSetIpAddressProcessor;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.server.TServer;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TServerSocket;
import org.apache.thrift.transport.TTransportFactory;

public final class GridlakeMetastore {
  private GridlakeMetastore() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("usage: GridlakeMetastore HOST PORT");
      System.exit(2);
    }
    String host = args[0];
    int port = Integer.parseInt(args[1]);
    HiveConf conf = new HiveConf(GridlakeMetastore.class);
    ThriftHiveMetastore.Iface handler = HiveMetaStore.newRetryingHMSHandler("gridlake metastore", conf, false);
    TServerSocket socket = new TServerSocket(new InetSocketAddress(host, port));
    TThreadPoolServer.Args serverArgs =
        new TThreadPoolServer.Args(socket)
            .processor(new TSetIpAddressProcessor<>(handler))
            .transportFactory(new TTransportFactory())
            .protocolFactory(new TBinaryProtocol.Factory())
            .minWorkerThreads(conf.getIntVar(HiveConf.ConfVars.METASTORESERVERMINTHREADS))
            .maxWorkerThreads(conf.getIntVar(HiveConf.ConfVars.METASTORESERVERMAXTHREADS));
    TServer server = new TThreadPoolServer(serverArgs);
    Runtime.getRuntime().addShutdownHook(new Thread(server::stop));
    System.err.println("gridlake metastore: serving thrift on " + host + ":" + port);
    server.serve();
  }
}
