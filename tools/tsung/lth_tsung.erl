%% Dynamic-variable callbacks for tsung.xml.in (compiled by run.sh with erlc into the run folder).
%% They make every Tsung user run for a fixed time: Tsung itself only loops a count or stops the
%% whole test with an abort (<load duration>), which loses the statistics of the last half second.
%% A compiled callback costs far less per request than an eval'd one (~13% throughput).
-module(lth_tsung).
-export([start/1, go/1, next/1, stop/1]).

%% Once per user: its deadline (monotonic ms) = now + lth_duration_ms; notes its start (epoch us).
start({_Pid, DynVars}) ->
    note(DynVars, "start"),
    integer_to_binary(erlang:monotonic_time(millisecond) + to_int(lookup(lth_duration_ms, DynVars))).

%% After every request: <<"1">> while the user's deadline has not passed.
go({_Pid, DynVars}) ->
    case erlang:monotonic_time(millisecond) < to_int(lookup(lth_deadline, DynVars)) of
        true -> <<"1">>;
        false -> <<"0">>
    end.

%% The login flow's loop of GETs (a <for> over lth_i up to lth_gets_per_login), after every GET: lth_i as it is
%% while the user's deadline has not passed, else the loop's end, which ends the <for> (and go/1 the session).
next(Arg = {_Pid, DynVars}) ->
    case go(Arg) of
        <<"1">> -> lookup(lth_i, DynVars);
        <<"0">> -> to_int(lookup(lth_gets_per_login, DynVars))
    end.

%% Once per user, after its loop: notes its end (epoch us).
stop({_Pid, DynVars}) ->
    note(DynVars, "end"),
    <<"0">>.

note(DynVars, What) ->
    File = binary_to_list(to_bin(lookup(lth_users_file, DynVars))),
    Line = io_lib:format("~s ~b~n", [What, erlang:system_time(microsecond)]),
    ok = file:write_file(File, Line, [append]).

lookup(Name, DynVars) ->
    {ok, Value} = ts_dynvars:lookup(Name, DynVars),
    Value.

to_int(V) when is_integer(V) -> V;
to_int(V) when is_binary(V) -> binary_to_integer(V);
to_int(V) when is_list(V) -> list_to_integer(V).

to_bin(V) when is_binary(V) -> V;
to_bin(V) when is_list(V) -> list_to_binary(V).
