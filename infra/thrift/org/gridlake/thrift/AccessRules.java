// Who may run what on the Spark Thrift Server: a check rule (spark.sql.extensions) that sees
// every statement's analysed plan, with the authenticated user of its session
// (CurrentUserContext, set by the Thrift Server for each operation), before anything runs.
//
//   every user   no SQL on files (refused while a session has spark.sql.runSQLOnFiles on: a
//                client cannot turn it on by SET or by its connection's settings), no statement
//                timeout longer than the server's (a session may shorten it), no Java
//                reflection (reflect/java_method), no script transforms (TRANSFORM ... USING),
//                no ADD JAR/FILE/ARCHIVE, no CREATE FUNCTION, no LOAD DATA
//   writer       (the pipeline) everything else
//   reader       (operator) queries over any table or view and metadata commands (SHOW,
//                DESCRIBE, EXPLAIN, USE); nothing that writes, caches or changes settings
//   views        (Superset) as reader, but a query may read only `grid` views (whatever they
//                read underneath) and `gold` tables: no silver, no bronze
//
// Statements the Thrift Server runs for itself (no user) are not checked. Metadata calls of the
// Thrift protocol (GetTables, GetColumns) list names without running a statement.
package org.gridlake.thrift;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Locale;
import java.util.Set;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkContext$;
import org.apache.spark.network.util.JavaUtils;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.CurrentUserContext$;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.HiveTableRelation;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.Command;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.View;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import scala.Function1;
import scala.Option;
import scala.collection.Iterator;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

public final class AccessRules extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {

  /** Metadata and read-only commands a reader may run. */
  static final Set<String> READ_COMMANDS = new HashSet<>(Arrays.asList(
      "ShowTables", "ShowTablesCommand", "ShowTablesExtended", "ShowNamespaces", "ShowViews",
      "ShowViewsCommand", "ShowColumns", "ShowColumnsCommand", "ShowFunctions",
      "ShowFunctionsCommand", "ShowCatalogsCommand", "ShowCurrentNamespaceCommand",
      "ShowPartitions", "ShowPartitionsCommand", "ShowTablePropertiesCommand",
      "DescribeRelation", "DescribeTableCommand", "DescribeRelationJsonCommand",
      "DescribeColumn", "DescribeColumnCommand", "DescribeNamespace", "DescribeDatabaseCommand",
      "DescribeFunction", "DescribeFunctionCommand", "DescribeQueryCommand", "ExplainCommand",
      "SetCatalogAndNamespace", "SetNamespaceCommand",
      "DescribeDeltaHistory", "DescribeDeltaHistoryCommand", "DescribeDeltaDetailCommand"));

  /** Plan nodes nobody may run through the Thrift Server. */
  static final Set<String> DENIED_NODES = new HashSet<>(Arrays.asList(
      "ScriptTransformation", "AddJarsCommand", "AddFilesCommand", "AddArchivesCommand",
      "CreateFunctionCommand", "CreateFunction", "LoadDataCommand", "LoadData"));

  /** Expressions nobody may use. */
  static final Set<String> DENIED_EXPRESSIONS = new HashSet<>(Arrays.asList(
      "CallMethodViaReflection"));

  /** Databases the `views` role may read (views of grid read what they read underneath). */
  static final Set<String> VIEWS_DATABASES = new HashSet<>(Arrays.asList("grid", "gold"));

  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectCheckRule(new Builder());
    return BoxedUnit.UNIT;
  }

  static final class Builder
      extends AbstractFunction1<SparkSession, Function1<LogicalPlan, BoxedUnit>> {
    @Override
    public Function1<LogicalPlan, BoxedUnit> apply(SparkSession session) {
      return new Check(session);
    }
  }

  /**
   * The check of one session's plans. Its settings are read from that session, not from the
   * thread's active one (SQLConf.get): Delta computes a table's state with a query of its own,
   * e.g. after a RESTORE commit that has no checksum file, in a thread that inherits the user
   * but whose active settings may be Spark's defaults (runSQLOnFiles on): every read of the
   * restored table was refused.
   */
  static final class Check extends AbstractFunction1<LogicalPlan, BoxedUnit> {
    private final SparkSession session;

    Check(SparkSession session) {
      this.session = session;
    }

    @Override
    public BoxedUnit apply(LogicalPlan plan) {
      String user = CurrentUserContext$.MODULE$.CURRENT_USER().get();
      if (user == null || checkingViewBody()) {
        // No user: the server's own statement. A view's body: the analyser checks it on its own
        // while resolving the view; it is checked as part of the statement that reads the view
        // (a View node, below), where a grid view is what the `views` role may read.
        return BoxedUnit.UNIT;
      }
      if (Boolean.parseBoolean(session.conf().get("spark.sql.runSQLOnFiles", "true"))) {
        deny(user, "SQL on files is off on this server (spark.sql.runSQLOnFiles=true is refused)");
      }
      checkTimeout(user, session);
      Users.Role role = Users.roleOf(user);
      if (role == null) {
        deny(user, "unknown user");
      }
      try {
        walk(plan, role, user);
      } catch (SecurityException e) {
        if (Boolean.getBoolean("gridlake.thrift.debug")) {
          System.err.println("gridlake: refused plan\n" + plan.treeString());
        }
        throw e;
      }
      return BoxedUnit.UNIT;
    }
  }

  static final String TIMEOUT = "spark.sql.thriftServer.queryTimeout";

  /**
   * A session may shorten the server's statement timeout (a connection's
   * set:hiveconf:spark.sql.thriftServer.queryTimeout), never lengthen or remove it.
   */
  static void checkTimeout(String user, SparkSession spark) {
    Option<SparkContext> sc = SparkContext$.MODULE$.getActive();
    if (sc.isEmpty()) {
      return;
    }
    long server = JavaUtils.timeStringAsSec(sc.get().getConf().get(TIMEOUT, "0"));
    long session = JavaUtils.timeStringAsSec(spark.conf().get(TIMEOUT, "0"));
    if (server > 0 && (session <= 0 || session > server)) {
      deny(user, "a statement timeout above the server's (" + server + " s) is refused");
    }
  }

  /**
   * True when the analyser checks a view's body (Analyzer.ResolveRelations.resolveViews calls
   * checkAnalysis on it), rather than a whole statement (Analyzer.executeAndCheck).
   */
  static boolean checkingViewBody() {
    return StackWalker.getInstance().walk(frames -> frames
        .map(StackWalker.StackFrame::getMethodName)
        .filter(m -> m.equals("executeAndCheck") || m.endsWith("resolveViews"))
        .findFirst()
        .map(m -> m.endsWith("resolveViews"))
        .orElse(false));
  }

  static void deny(String user, String why) {
    throw new SecurityException("GRIDLAKE_ACCESS_DENIED: user " + user + ": " + why);
  }

  static void walk(LogicalPlan p, Users.Role role, String user) {
    String name = p.getClass().getSimpleName();
    if (DENIED_NODES.contains(name)) {
      deny(user, name + " is not served");
    }
    Iterator<Expression> exprs = p.expressions().iterator();
    while (exprs.hasNext()) {
      checkExpression(exprs.next(), user);
    }
    if (role != Users.Role.WRITER) {
      if (p instanceof Command) {
        if (READ_COMMANDS.contains(name)) {
          return;
        }
        deny(user, "only reads are served to this user, not " + name);
      }
      if (role == Users.Role.VIEWS) {
        if (p instanceof View) {
          View v = (View) p;
          Option<String> db = v.desc().identifier().database();
          if (!v.isTempView() && db.isDefined()
              && db.get().toLowerCase(Locale.ROOT).equals("grid")) {
            return;  // a grid view: what it reads underneath is its definition's business
          }
        }
        // A leaf that names a catalog table must be in grid or gold. One that names none is a
        // query Spark or Delta runs for itself while serving the statement (Delta's log replay
        // reads JSON and Parquet files by path): a statement cannot name files, since SQL on
        // files is refused above and CREATE ... USING is a command a reader may not run.
        if (p.children().isEmpty()) {
          String db = databaseOf(p);
          if (db != null && !VIEWS_DATABASES.contains(db.toLowerCase(Locale.ROOT))) {
            deny(user, "may read the grid views and gold tables only, not " + db + " tables");
          }
        }
      }
    }
    Iterator<LogicalPlan> children = p.children().iterator();
    while (children.hasNext()) {
      walk(children.next(), role, user);
    }
    Iterator<LogicalPlan> subqueries = p.subqueries().iterator();
    while (subqueries.hasNext()) {
      walk(subqueries.next(), role, user);
    }
  }

  static void checkExpression(Expression e, String user) {
    if (DENIED_EXPRESSIONS.contains(e.getClass().getSimpleName())) {
      deny(user, "Java reflection (reflect, java_method) is not served");
    }
    Iterator<Expression> children = e.children().iterator();
    while (children.hasNext()) {
      checkExpression(children.next(), user);
    }
  }

  /** The database of a table a leaf reads, or null when it is not a catalog table. */
  static String databaseOf(LogicalPlan p) {
    if (p instanceof LogicalRelation) {
      Option<CatalogTable> t = ((LogicalRelation) p).catalogTable();
      return t.isDefined() ? t.get().identifier().database().getOrElse(() -> null) : null;
    }
    if (p instanceof HiveTableRelation) {
      return ((HiveTableRelation) p).tableMeta().identifier().database().getOrElse(() -> null);
    }
    if (p instanceof DataSourceV2Relation) {
      Option<Identifier> id = ((DataSourceV2Relation) p).identifier();
      if (id.isDefined() && id.get().namespace().length > 0) {
        String[] ns = id.get().namespace();
        return ns[ns.length - 1];
      }
    }
    return null;
  }
}
