// A Netty 4.1 NIO TCP echo server, the Netty peer of gyre's echo_server in the network
// benchmarks (net/echo/netty/<size>): one boss loop accepts, one worker loop serves every
// connection; the handler writes back what it reads and flushes once per read batch
// (channelReadComplete); TCP_NODELAY on the accepted sockets.
//
//   java -cp CLASSES:NETTY_JARS EchoServer --host=127.0.0.1 --port=0
//
// Prints "listening on HOST:PORT" (flushed) once bound; runs until SIGTERM or SIGINT.
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

public final class EchoServer {
  @ChannelHandler.Sharable
  static final class EchoHandler extends ChannelInboundHandlerAdapter {
    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      ctx.write(msg);
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
      ctx.flush();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      System.err.println("connection error: " + cause);
      ctx.close();
    }
  }

  static void usage(String why) {
    System.err.println("EchoServer: " + why);
    System.err.println("usage: EchoServer [--host=127.0.0.1] [--port=N (0: any free port)]");
    System.exit(2);
  }

  public static void main(String[] args) throws Exception {
    String host = "127.0.0.1";
    int port = 8007;
    for (String a : args) {
      if (a.startsWith("--host=")) {
        host = a.substring("--host=".length());
      } else if (a.startsWith("--port=")) {
        try {
          port = Integer.parseInt(a.substring("--port=".length()));
        } catch (NumberFormatException e) {
          usage("bad --port " + a);
        }
        if (port < 0 || port > 65535) usage("--port must be 0..65535");
      } else {
        usage("unknown argument " + a);
      }
    }
    final EventLoopGroup boss = new NioEventLoopGroup(1);
    final EventLoopGroup worker = new NioEventLoopGroup(1);
    // SIGTERM / SIGINT run the shutdown hooks: close the loops, then the JVM exits.
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      worker.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      boss.terminationFuture().awaitUninterruptibly(2, TimeUnit.SECONDS);
      worker.terminationFuture().awaitUninterruptibly(2, TimeUnit.SECONDS);
    }));
    final EchoHandler echo = new EchoHandler();
    ServerBootstrap b = new ServerBootstrap()
        .group(boss, worker)
        .channel(NioServerSocketChannel.class)
        .option(ChannelOption.SO_BACKLOG, 1024)
        .childOption(ChannelOption.TCP_NODELAY, true)
        .childHandler(new ChannelInitializer<SocketChannel>() {
          @Override
          protected void initChannel(SocketChannel ch) {
            ch.pipeline().addLast(echo);
          }
        });
    Channel server;
    try {
      server = b.bind(host, port).sync().channel();
    } catch (Exception e) {
      System.err.println("EchoServer: cannot listen on " + host + ":" + port + ": " + e);
      System.exit(1);
      return;
    }
    InetSocketAddress bound = (InetSocketAddress) server.localAddress();
    String shown = bound.getAddress().getHostAddress();
    if (shown.contains(":")) shown = "[" + shown + "]";
    System.out.println("listening on " + shown + ":" + bound.getPort());
    System.out.flush();
    server.closeFuture().sync();
  }
}
