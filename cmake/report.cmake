# The HTML report's chart code (`retrystorm analyze --format html`): Vite
# builds web/src/report into one script and one style sheet
# (web/vite.report.config.ts), compiled into the program as text for
# src/formats/report_assets.hpp. With RETRYSTORM_WEB=OFF there is none and the
# report has its tables without charts.
set(REPORT_ASSETS_CPP ${CMAKE_BINARY_DIR}/generated/report_assets.cpp)
set(REPORT_DIST ${CMAKE_SOURCE_DIR}/web/dist-report)
if(RETRYSTORM_WEB)
  file(GLOB_RECURSE REPORT_WEB_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/web/src/*)
  add_custom_command(
    OUTPUT ${REPORT_ASSETS_CPP}
    COMMAND npm run build:report --silent
    COMMAND ${CMAKE_COMMAND} -DOUT=${REPORT_ASSETS_CPP} -DFUNC=report_asset_texts
            "-DFILES=${REPORT_DIST}/report.js|${REPORT_DIST}/report.css"
            -P ${CMAKE_SOURCE_DIR}/cmake/embed_text.cmake
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/web
    DEPENDS ${REPORT_WEB_SOURCES} ${CMAKE_SOURCE_DIR}/web/package.json
            ${CMAKE_SOURCE_DIR}/web/vite.report.config.ts ${CMAKE_SOURCE_DIR}/cmake/embed_text.cmake
    COMMENT "Building the report's charts (npm run build:report) and embedding them"
    VERBATIM)
else()
  add_custom_command(
    OUTPUT ${REPORT_ASSETS_CPP}
    COMMAND ${CMAKE_COMMAND} -DOUT=${REPORT_ASSETS_CPP} -DFUNC=report_asset_texts -DFILES=
            -P ${CMAKE_SOURCE_DIR}/cmake/embed_text.cmake
    DEPENDS ${CMAKE_SOURCE_DIR}/cmake/embed_text.cmake
    COMMENT "Embedding no report charts (RETRYSTORM_WEB=OFF)"
    VERBATIM)
endif()
