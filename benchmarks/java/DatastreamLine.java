package cdcnorm.bench;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;
import java.math.BigDecimal;
import java.util.ArrayList;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;

/**
 * The cost of reading a Datastream JSON line exactly in the JVM, measured by benchmarks/java_parse_cost.py: Jackson's
 * streaming parser (shipped with Spark) reads the envelope members typed (a member of another JSON type, a duplicate
 * key or damaged JSON gives null: the line would go to the Python decoder), the payload re-written with the numbers
 * a VARIANT cannot hold exactly (beyond 38 digits) as strings, from the number's own text, and each payload value's
 * kind. It reads the members the Datastream adapter's rules read for MySQL events; it is a measurement, not a
 * decoder: the envelope rules, event ids and schema versions stay the adapter's.
 */
public class DatastreamLine implements UDF1<String, Row> {
  private static final JsonFactory F = JsonFactory.builder()
      .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();

  private static final com.fasterxml.jackson.core.io.JsonStringEncoder Q =
      com.fasterxml.jackson.core.io.JsonStringEncoder.getInstance();

  private static final class Mismatch extends Exception {
    Mismatch() { super(null, null, false, false); }
  }
  private static final Mismatch MISMATCH = new Mismatch();

  private static String str(JsonParser p, JsonToken t) throws Mismatch, java.io.IOException {
    if (t == JsonToken.VALUE_NULL) return null;
    if (t != JsonToken.VALUE_STRING) throw MISMATCH;
    return p.getText();
  }

  private static Long lng(JsonParser p, JsonToken t) throws Mismatch, java.io.IOException {
    if (t == JsonToken.VALUE_NULL) return null;
    if (t != JsonToken.VALUE_NUMBER_INT || p.getNumberType() == JsonParser.NumberType.BIG_INTEGER) throw MISMATCH;
    return p.getLongValue();
  }

  @Override
  public Row call(String line) throws Exception {
    if (line == null) return null;
    try (JsonParser p = F.createParser(line)) {
      if (p.nextToken() != JsonToken.START_OBJECT) return null;
      String uuid = null, readTs = null, sourceTs = null, object = null, readMethod = null, stream = null,
          schemaKey = null, table = null, database = null, schema = null, changeType = null, logFile = null;
      Long logPos = null;
      boolean isDeleted = false;
      ArrayList<String> pks = null;
      StringBuilder payload = null, kinds = null;
      boolean widened = false;
      JsonToken t;
      while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        t = p.nextToken();
        switch (name) {
          case "uuid": uuid = str(p, t); break;
          case "read_timestamp": readTs = str(p, t); break;
          case "source_timestamp": sourceTs = str(p, t); break;
          case "object": object = str(p, t); break;
          case "read_method": readMethod = str(p, t); break;
          case "stream_name": stream = str(p, t); break;
          case "schema_key": schemaKey = str(p, t); break;
          case "source_metadata":
            if (t != JsonToken.START_OBJECT) throw MISMATCH;
            while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
              String m = p.currentName();
              t = p.nextToken();
              switch (m) {
                case "table": table = str(p, t); break;
                case "database": database = str(p, t); break;
                case "schema": schema = str(p, t); break;
                case "change_type": changeType = str(p, t); break;
                case "log_file": logFile = str(p, t); break;
                case "log_position": logPos = lng(p, t); break;
                case "is_deleted": isDeleted = t == JsonToken.VALUE_TRUE; break;
                case "primary_keys":
                  if (t != JsonToken.START_ARRAY) throw MISMATCH;
                  pks = new ArrayList<>();
                  while ((t = p.nextToken()) != JsonToken.END_ARRAY) pks.add(str(p, t));
                  break;
                default: p.skipChildren();
              }
            }
            break;
          case "payload":
            if (t != JsonToken.START_OBJECT) throw MISMATCH;
            payload = new StringBuilder(line.length());
            kinds = new StringBuilder();
            payload.append('{');
            boolean first = true;
            while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
              if (!first) payload.append(',');
              first = false;
              payload.append('"').append(Q.quoteAsString(p.getText())).append("\":");
              t = p.nextToken();
              switch (t) {
                case VALUE_STRING: payload.append('"').append(Q.quoteAsString(p.getText())).append('"'); kinds.append('s'); break;
                case VALUE_NUMBER_INT: {
                  String text = p.getText();
                  if (text.length() > 38) { payload.append('"').append(text).append('"'); widened = true; }
                  else payload.append(text);
                  kinds.append('i');
                  break;
                }
                case VALUE_NUMBER_FLOAT: {
                  String text = p.getText();
                  BigDecimal d = new BigDecimal(text);
                  if (d.precision() > 38) { payload.append('"').append(text).append('"'); widened = true; }
                  else payload.append(text);
                  kinds.append('d');
                  break;
                }
                case VALUE_TRUE: payload.append("true"); kinds.append('b'); break;
                case VALUE_FALSE: payload.append("false"); kinds.append('b'); break;
                case VALUE_NULL: payload.append("null"); kinds.append('n'); break;
                default: throw MISMATCH;
              }
            }
            payload.append('}');
            break;
          default: p.skipChildren();
        }
      }
      return RowFactory.create(uuid, readTs, sourceTs, object, readMethod, stream, schemaKey, table, database, schema,
          changeType, logFile, logPos, isDeleted, pks == null ? null : pks.toArray(new String[0]),
          payload == null ? null : payload.toString(), kinds == null ? null : kinds.toString(), widened);
    } catch (Mismatch | com.fasterxml.jackson.core.JsonProcessingException e) {
      return null;
    }
  }
}
